// SIGINT and SIGTERM as a request to stop: the handler only records the signal (and restores the
// default action, so a second one ends the process at once); the run stops at its next safe
// point (a step boundary, the next block an OutputFile writes) by throwing Interrupted, whose
// unwinding removes temporaries, and the front end exits 128 + the signal (130, 143).
#pragma once

namespace parascope {

// Installs the recording handler for SIGINT and SIGTERM. Idempotent.
void installStopSignalHandlers();

// The recorded signal, or 0.
int pendingStopSignal();

// At a safe point: throws Interrupted if a stop signal has been recorded.
void throwIfStopRequested();

// For tests: records `signal` as if it had been delivered, or clears the record with 0.
void setPendingStopSignal(int signal);

}  // namespace parascope
