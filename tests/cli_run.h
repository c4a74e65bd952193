// The command-line tests' way to run parascope-cli (PARASCOPE_CLI, defined by each test target)
// as a child process: its exit status (-1 if it crashed or was killed at the time limit), stdout
// and stderr.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

namespace parascope::test {

struct CliResult {
  int code;
  QString out, err;
};

// workingDirectory empty: the test's own.
inline CliResult runCli(const QStringList& args, int timeoutMs,
                        const QString& workingDirectory = {}) {
  QProcess p;
  if (!workingDirectory.isEmpty()) p.setWorkingDirectory(workingDirectory);
  p.start(PARASCOPE_CLI, args);
  if (!p.waitForFinished(timeoutMs)) p.kill();
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
          QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

}  // namespace parascope::test
