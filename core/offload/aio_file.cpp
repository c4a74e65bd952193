#include "core/offload/aio_file.h"

#include <fcntl.h>
#include <libaio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/common/error.h"
#include "core/common/printable.h"
#include "core/trace/trace.h"

namespace parascope {

struct AioFile::Slot {
  iocb control{};
  Ticket ticket = 0;
  std::int64_t bytes = 0;
};

namespace {

std::string reason(int error) {
  return std::strerror(error);
}

}  // namespace

AioFile::AioFile(const std::string& directory, const std::string& what, std::int64_t bytes,
                 const AioSpec& aio, AioTraceNames names)
    : directory_(printableText(directory)), what_(what), aio_(aio), names_(names), bytes_(bytes) {
  const std::string where = what + " '" + directory_ + "'";
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec)) {
    throw UserError(
        where +
        (std::filesystem::exists(directory, ec) ? " is not a directory" : " does not exist") +
        "; valid: an existing, writable directory on a local disk");
  }
  // A name no other run uses; unlinked as soon as it is open.
  std::string pattern = directory + "/parascope-swap-XXXXXX";
  fd_ = mkostemp(pattern.data(), O_CLOEXEC);
  if (fd_ < 0) {
    const int e = errno;
    throw UserError(where + " is not writable (" + reason(e) +
                    "); valid: a directory this user may create files in");
  }
  unlink(pattern.c_str());
  // Direct I/O is asked for on the open file: a filesystem without it (tmpfs before Linux 6.6,
  // some network and FUSE filesystems) refuses the flag.
  const int flags = fcntl(fd_, F_GETFL);
  if (flags < 0 || fcntl(fd_, F_SETFL, flags | O_DIRECT) < 0) {
    const int e = errno;
    close(fd_);
    throw UserError(where + " is on a filesystem without direct I/O (O_DIRECT: " + reason(e) +
                    "), which swapping needs so that the page cache does not hold the state; "
                    "valid: a directory on a local disk (ext4, xfs)");
  }
  if (bytes > 0) {
    const int e = posix_fallocate(fd_, 0, bytes);
    if (e != 0) {
      struct statvfs fs {};
      // A full disk says how much is free; another reason (a file-size limit) speaks for itself.
      const bool known = e == ENOSPC && fstatvfs(fd_, &fs) == 0;
      close(fd_);
      const std::string free = known ? ", " +
                                           formatBytes(static_cast<double>(fs.f_bavail) *
                                                       static_cast<double>(fs.f_frsize)) +
                                           " free"
                                     : "";
      throw UserError(where + ": cannot reserve " + formatBytes(static_cast<double>(bytes)) +
                      " for this rank's swap file (" + reason(e) + free +
                      "); free space there or choose a directory on a larger disk");
    }
  }
  // One kernel context per aio.thread_count, each with queue_depth slots: slot i belongs to
  // context i / queue_depth.
  contexts_.assign(static_cast<std::size_t>(aio.threadCount), nullptr);
  for (io_context*& context : contexts_) {
    if (const int e = io_setup(aio.queueDepth, &context); e < 0) {
      context = nullptr;
      destroyContexts();
      close(fd_);
      throw UserError(where + ": the kernel refused " + std::to_string(aio.threadCount) +
                      " asynchronous I/O context(s) of " + std::to_string(aio.queueDepth) +
                      " requests (" + reason(-e) +
                      "); lower aio.queue_depth or aio.thread_count, or raise "
                      "/proc/sys/fs/aio-max-nr");
    }
  }
  inFlight_.assign(contexts_.size(), 0);
  slots_.resize(static_cast<std::size_t>(aio.queueDepth) * contexts_.size());
  // Taken from the back: consecutive blocks go to the contexts in turn.
  for (int i = aio.queueDepth - 1; i >= 0; --i) {
    for (int c = aio.threadCount - 1; c >= 0; --c) free_.push_back(c * aio.queueDepth + i);
  }
}

void AioFile::destroyContexts() noexcept {
  // io_destroy cancels what it can and blocks until the rest completes: no buffer is read or
  // written after this, even when an error left requests in flight.
  for (io_context* context : contexts_) {
    if (context != nullptr) io_destroy(context);
  }
  contexts_.clear();
}

AioFile::~AioFile() {
  destroyContexts();
  if (fd_ >= 0) close(fd_);
}

AioFile::Ticket AioFile::enqueue(bool isWrite, char* buffer, std::int64_t bytes,
                                 std::int64_t offset) {
  if (bytes % kAlignment != 0 || offset % kAlignment != 0 ||
      reinterpret_cast<std::uintptr_t>(buffer) % kAlignment != 0 || offset + bytes > bytes_) {
    throw std::logic_error("AioFile: a request not aligned to 4096 bytes or past the file's end");
  }
  const Ticket ticket = next_++;
  Request& r = requests_[ticket];
  r.isWrite = isWrite;
  r.bytes = bytes;
  if (trace::recorder() != nullptr) r.askedAt = trace::ticks();
  for (std::int64_t at = 0; at < bytes; at += aio_.blockSize) {
    queued_.push_back(
        {ticket, isWrite, buffer + at, std::min(aio_.blockSize, bytes - at), offset + at});
    ++r.blocksLeft;
  }
  submit();
  return ticket;
}

AioFile::Ticket AioFile::read(void* buffer, std::int64_t bytes, std::int64_t offset) {
  return enqueue(false, static_cast<char*>(buffer), bytes, offset);
}

AioFile::Ticket AioFile::write(const void* buffer, std::int64_t bytes, std::int64_t offset) {
  // The kernel only reads a write's buffer.
  return enqueue(true, static_cast<char*>(const_cast<void*>(buffer)), bytes, offset);
}

void AioFile::submit() {
  // Without overlap_events a new batch starts only when the last one has completed whole.
  if (!aio_.overlapEvents && free_.size() < slots_.size()) return;
  std::vector<std::vector<iocb*>> batches(contexts_.size());  // per context
  const auto failed = [this](int e) {
    return std::runtime_error(what_ + " '" + directory_ + "': submitting I/O failed (" +
                              reason(e < 0 ? -e : EAGAIN) + ")");
  };
  while (!queued_.empty() && !free_.empty()) {
    const Block b = queued_.front();
    queued_.pop_front();
    const int index = free_.back();
    free_.pop_back();
    const auto context = static_cast<std::size_t>(index / aio_.queueDepth);
    ++inFlight_[context];
    Slot& slot = slots_[static_cast<std::size_t>(index)];
    slot.ticket = b.ticket;
    if (Request& r = requests_[b.ticket]; r.askedAt != 0 && r.submittedAt == 0)
      r.submittedAt = trace::ticks();
    slot.bytes = b.bytes;
    if (b.isWrite) {
      io_prep_pwrite(&slot.control, fd_, b.buffer, static_cast<std::size_t>(b.bytes), b.offset);
    } else {
      io_prep_pread(&slot.control, fd_, b.buffer, static_cast<std::size_t>(b.bytes), b.offset);
    }
    slot.control.data = &slot;
    if (aio_.singleSubmit) {
      iocb* one = &slot.control;
      if (const int e = io_submit(contexts_[context], 1, &one); e != 1) throw failed(e);
    } else {
      batches[context].push_back(&slot.control);
    }
  }
  for (std::size_t c = 0; c < contexts_.size(); ++c) {
    std::vector<iocb*>& batch = batches[c];
    std::size_t done = 0;
    while (done < batch.size()) {
      const int e =
          io_submit(contexts_[c], static_cast<long>(batch.size() - done), batch.data() + done);
      if (e <= 0) throw failed(e);
      done += static_cast<std::size_t>(e);
    }
  }
}

void AioFile::reap(int atLeast) {
  // Every context's completions without blocking; then, if `atLeast` is not met, a wait on the
  // first context with requests in flight.
  int taken = 0;
  for (std::size_t c = 0; c < contexts_.size(); ++c) {
    if (inFlight_[c] > 0) taken += reapContext(c, 0);
  }
  if (taken >= atLeast) return;
  for (std::size_t c = 0; c < contexts_.size(); ++c) {
    if (inFlight_[c] > 0) {
      reapContext(c, 1);
      return;
    }
  }
}

int AioFile::reapContext(std::size_t c, int atLeast) {
  const long inFlight = inFlight_[c];
  std::vector<io_event> events(static_cast<std::size_t>(inFlight));
  timespec zero{};
  int n = 0;
  do {
    n = io_getevents(contexts_[c], std::min<long>(atLeast, inFlight), inFlight, events.data(),
                     atLeast > 0 ? nullptr : &zero);
  } while (n == -EINTR);
  if (n < 0) {
    throw std::runtime_error(what_ + " '" + directory_ + "': waiting for I/O failed (" +
                             reason(-n) + ")");
  }
  inFlight_[c] -= n;
  for (int i = 0; i < n; ++i) {
    auto* slot = static_cast<Slot*>(events[static_cast<std::size_t>(i)].data);
    const auto result = static_cast<long>(events[static_cast<std::size_t>(i)].res);
    Request& r = requests_[slot->ticket];
    if (result != slot->bytes && r.error.empty()) {
      r.error = result < 0 ? reason(static_cast<int>(-result))
                           : "short transfer of " + std::to_string(result) + " of " +
                                 std::to_string(slot->bytes) + " bytes";
    }
    --r.blocksLeft;
    free_.push_back(static_cast<int>(slot - slots_.data()));
    if (r.blocksLeft == 0 && r.askedAt != 0) {
      const std::int64_t now = trace::ticks();
      trace::span(r.isWrite ? names_.write : names_.read, trace::Category::Io, trace::lane::kIo,
                  r.askedAt, now, r.bytes);
      trace::span("queued", trace::Category::Io, trace::lane::kIo, r.askedAt, r.submittedAt, 0);
    }
  }
  return n;
}

void AioFile::progress() {
  reap(0);
  submit();
}

void AioFile::wait(Ticket ticket) {
  auto it = requests_.find(ticket);
  if (it == requests_.end()) return;
  if (it->second.blocksLeft > 0) {
    const trace::Span waiting("swap wait", trace::Category::Sync);
    while (it->second.blocksLeft > 0) {
      submit();
      reap(1);
    }
  }
  submit();
  const Request r = it->second;
  requests_.erase(it);
  if (!r.error.empty()) {
    throw std::runtime_error(what_ + " '" + directory_ +
                             "': " + (r.isWrite ? "writing " : "reading ") +
                             formatBytes(static_cast<double>(r.bytes)) +
                             " of this rank's swap file failed (" + r.error + ")");
  }
  (r.isWrite ? bytesWritten_ : bytesRead_) += r.bytes;
}

void AioFile::waitAll() {
  std::vector<Ticket> tickets;
  for (const auto& [ticket, request] : requests_) tickets.push_back(ticket);
  std::sort(tickets.begin(), tickets.end());
  for (Ticket t : tickets) wait(t);
}

void checkSwapDirectory(const std::string& directory, const std::string& what, double bytes,
                        const AioSpec& aio) {
  const AioFile probe(directory, what, 0, aio);
  struct statvfs fs {};
  if (statvfs(directory.c_str(), &fs) != 0)
    return;  // the probe could write there; fallocate judges
  const double free = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  if (bytes > free) {
    throw UserError(what + " '" + printableText(directory) + "': the run's swap files need " +
                    formatBytes(bytes) + " and the filesystem has " + formatBytes(free) +
                    " free; free space there or choose a directory on a larger disk");
  }
}

AlignedBuffer::AlignedBuffer(std::int64_t bytes, bool pin, Allocator& allocator,
                             MemoryCategory category)
    : allocator_(&allocator), category_(category), bytes_(bytes) {
  // The allocator aligns to 64 bytes; one page more leaves room to start on a page.
  raw_ = allocator.allocate(static_cast<std::size_t>(bytes + AioFile::kAlignment), category);
  const auto at = reinterpret_cast<std::uintptr_t>(raw_);
  aligned_ = static_cast<char*>(raw_) +
             (AioFile::kAlignment - at % AioFile::kAlignment) % AioFile::kAlignment;
  if (pin && bytes > 0) {
    if (mlock(aligned_, static_cast<std::size_t>(bytes)) != 0) {
      const int e = errno;
      allocator.deallocate(raw_, static_cast<std::size_t>(bytes + AioFile::kAlignment), category);
      throw UserError("pin_memory: locking " + formatBytes(static_cast<double>(bytes)) +
                      " of I/O buffers failed (" + reason(e) +
                      "); raise the locked-memory limit (ulimit -l) or set pin_memory false");
    }
    pinned_ = true;
  }
}

AlignedBuffer::~AlignedBuffer() {
  if (raw_ == nullptr) return;
  if (pinned_) munlock(aligned_, static_cast<std::size_t>(bytes_));
  allocator_->deallocate(raw_, static_cast<std::size_t>(bytes_ + AioFile::kAlignment), category_);
}

SwapFile::SwapFile(const OffloadSpec& spec, const std::string& what, std::int64_t fileBytes,
                   std::int64_t bufferBytes, const AioSpec& aio, AioTraceNames names,
                   Allocator& allocator, MemoryCategory category)
    : allocator_(allocator), file_(spec.nvmePath, what, fileBytes, aio, names) {
  if (bufferBytes > 0)
    buffers_ = std::make_unique<AlignedBuffer>(bufferBytes, spec.pinMemory, allocator, category);
  allocator_.addDiskBytes(file_.size());
}

SwapFile::~SwapFile() {
  allocator_.addDiskBytes(-file_.size());
}

}  // namespace parascope
