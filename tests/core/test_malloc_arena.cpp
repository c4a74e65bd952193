// shareMallocArenas: after it, a thread allocating for the first time makes no arena of its own
// (core/common/malloc_arena.h says why). A binary of its own, so that no thread of an earlier test
// left an arena behind for the new thread to take.
#include <QtTest>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "core/common/malloc_arena.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define PARASCOPE_OWN_ALLOCATOR 1
#endif
#endif

class TestMallocArena : public QObject {
  Q_OBJECT
 private slots:
  void newThreadsMakeNoArena();
};

namespace {

#if defined(__GLIBC__) && !defined(PARASCOPE_OWN_ALLOCATOR)
// The arenas glibc has: malloc_info's XML has one <heap nr="..."> element for each.
int arenas() {
  char* text = nullptr;
  std::size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  if (out == nullptr || malloc_info(0, out) != 0) qFatal("malloc_info failed");
  std::fclose(out);
  const std::string xml(text, size);
  std::free(text);
  int n = 0;
  for (std::size_t at = xml.find("<heap nr="); at != std::string::npos;
       at = xml.find("<heap nr=", at + 1)) {
    ++n;
  }
  return n;
}
#endif

}  // namespace

void TestMallocArena::newThreadsMakeNoArena() {
#if !defined(__GLIBC__) || defined(PARASCOPE_OWN_ALLOCATOR)
  QSKIP("glibc's allocator only (a sanitizer brings its own)");
#else
  const int before = arenas();
  parascope::shareMallocArenas();
  // As oneDNN's products do: workspaces of a few hundred KiB to a few MiB, allocated and freed
  // on a thread of their own.
  std::thread rank([] {
    for (int i = 0; i < 8; ++i) {
      std::vector<void*> blocks;
      for (int j = 0; j < 4; ++j) blocks.push_back(std::malloc(std::size_t(512) << 10));
      for (void* b : blocks) std::free(b);
    }
  });
  rank.join();
  QCOMPARE(arenas(), before);
#endif
}

QTEST_APPLESS_MAIN(TestMallocArena)
#include "test_malloc_arena.moc"
