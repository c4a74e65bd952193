// Chrome trace export and import: an exact round trip (every field, to the nanosecond), one
// file per rank and merged, gzip, and the errors bad input gets, each naming its position.
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>

#include <fstream>

#include "core/common/error.h"
#include "profiler/io/chrome_export.h"
#include "profiler/io/chrome_import.h"
#include "profiler/synthetic_trace.h"
#include "trace_builder.h"

using namespace parascope::profiler;
using parascope::UserError;
namespace lane = parascope::trace::lane;
namespace flag = parascope::trace::flag;

namespace {

TraceData richTrace() {
  TraceData t;
  t.worldSize = 4;
  t.clockResidualNs = 1234;
  t.rankNames[0] = "rank 0 (host a)";
  t.laneNames[{1, lane::gpuStream(7)}] = "stream 7";
  t.gpuDevices[1] = 3;
  const char* names[] = {"matmul", "allReduce \"ring\"", "back\\slash\nnewline",
                         "caf\xc3\xa9 \xe2\x82\xac", "tab\there"};
  std::int64_t base = 1'700'000'000'123'456'789;  // ~ wall-clock ns: 1.7e15 us
  for (int i = 0; i < 40; ++i) {
    Event e;
    e.rank = i % 3;
    e.lane = i % 5 == 0 ? lane::gpuStream(7) : i % 9 == 4 ? lane::kRuntime : i % 4;
    e.name = t.strings.intern(names[i % 5]);
    e.category = static_cast<Category>(i % parascope::trace::kCategoryCount);
    e.kind = i % 7 == 0 ? EventKind::Counter : i % 11 == 0 ? EventKind::Instant : EventKind::Span;
    e.startNs = base + i * 1001 + (i % 2 ? -7 : 999);
    e.endNs = e.kind == EventKind::Span ? e.startNs + i * 13 + 1 : e.startNs;
    e.bytes = i * 1'000'003LL - 5;
    e.peer = i % 3 - 1;
    e.group = i % 2 ? i : -1;
    e.step = i / 10 - 1;
    e.microBatch = i % 4 - 1;
    e.stage = i % 3 == 0 ? -1 : i % 2;
    e.instruction = i - 1;
    e.correlation = i % 6 == 0 ? 0 : 0xF000000000000000ULL + static_cast<std::uint64_t>(i / 2);
    e.flags = static_cast<std::uint8_t>(i % 4);
    t.events.push_back(e);
  }
  Event kernel;  // GPU work as the CUPTI collector records it
  kernel.rank = 1;
  kernel.lane = lane::gpuStream(7);
  kernel.name = t.strings.intern("matmul");
  kernel.category = Category::Compute;
  kernel.startNs = base + 50'000;
  kernel.endNs = kernel.startNs + 2'000;
  kernel.correlation = 0xF000000000000003ULL;
  t.events.push_back(kernel);
  t.events.front().startNs = t.events.front().endNs = -5;  // negative times survive too
  t.sortByTime();
  return t;
}

void compareEvents(const TraceData& a, const TraceData& b) {
  QCOMPARE(a.events.size(), b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const Event& x = a.events[i];
    const Event& y = b.events[i];
    QCOMPARE(std::string(y.name), std::string(x.name));
    QCOMPARE(y.startNs, x.startNs);
    QCOMPARE(y.endNs, x.endNs);
    QCOMPARE(y.rank, x.rank);
    QCOMPARE(y.lane, x.lane);
    QCOMPARE(y.bytes, x.bytes);
    QCOMPARE(y.correlation, x.correlation);
    QCOMPARE(y.peer, x.peer);
    QCOMPARE(y.group, x.group);
    QCOMPARE(y.step, x.step);
    QCOMPARE(y.microBatch, x.microBatch);
    QCOMPARE(y.stage, x.stage);
    QCOMPARE(y.instruction, x.instruction);
    QCOMPARE(static_cast<int>(y.category), static_cast<int>(x.category));
    QCOMPARE(static_cast<int>(y.kind), static_cast<int>(x.kind));
    QCOMPARE(y.flags, x.flags);
  }
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

class TestChromeIo : public QObject {
  Q_OBJECT
 private slots:
  void roundTripMergedIsExact();
  void importStopsWhenCancelled();
  void roundTripGzip();
  void runConfigRoundTrips();
  void perRankFilesMergeBack();
  void kinetoConventions();
  void failedExportLeavesNoFile();
  void badInput_data();
  void badInput();
  void invalidUtf8NamesItsByte();
  void limits();
  void legacyArrayFormat();
  void unnamedThreadsAreLabelledReadably();
  void foreignArgsAreKeptAndRoundTrip();
  void microsecondParsing();
  void windowsOfAnySizeImportTheSame();

 private:
  QTemporaryDir dir_;
  std::string path(const char* name) { return (dir_.path() + "/" + name).toStdString(); }
};

// A set cancel flag stops an import before its next file and within its events; unset, the
// same import reads everything.
void TestChromeIo::importStopsWhenCancelled() {
  const TraceData t = richTrace();
  const std::string a = path("cancel-a.json"), b = path("cancel-b.json");
  exportChromeTrace(t, a);
  exportChromeTrace(t, b);
  std::atomic<bool> cancel{false};
  ImportOptions options;
  options.cancel = &cancel;
  QCOMPARE(importChromeTraces({a, b}, options).events.size(), 2 * t.events.size());
  cancel = true;
  QVERIFY_THROWS_EXCEPTION(parascope::profiler::ImportCancelled,
                           importChromeTraces({a, b}, options));
  QVERIFY_THROWS_EXCEPTION(parascope::profiler::ImportCancelled, importChromeTrace(a, options));
}

void TestChromeIo::roundTripMergedIsExact() {
  const TraceData t = richTrace();
  const std::string p = path("merged.json");
  const std::size_t written = exportChromeTrace(t, p);
  QCOMPARE(written, readAll(p).size());  // what it says it wrote is the file
  const TraceData back = importChromeTrace(p);
  compareEvents(t, back);
  QCOMPARE(back.worldSize, 4);
  QCOMPARE(back.clockResidualNs, std::int64_t{1234});
  QCOMPARE(back.rankNames.at(0), std::string("rank 0 (host a)"));
  QCOMPARE(back.rankNames.at(1), std::string("rank 1"));
  QCOMPARE(back.laneName(1, lane::gpuStream(7)), std::string("stream 7"));
  QCOMPARE(back.laneName(0, lane::kCommunication), std::string("communication"));
  QCOMPARE(back.gpuDevices, t.gpuDevices);
  // GPU work and CUDA calls in Kineto's categories and fields, for Perfetto and PyTorch's tools.
  const std::string text = readAll(p);
  QVERIFY(text.find(R"("cat":"kernel","name":"matmul","pid":1,"tid":1048583)") !=
          std::string::npos);
  QVERIFY(text.find(R"("device":3,"stream":7)") != std::string::npos);
  QVERIFY(text.find(R"("cat":"gpu_memcpy")") != std::string::npos);
  QVERIFY(text.find(R"("cat":"cuda_runtime")") != std::string::npos);
}

void TestChromeIo::roundTripGzip() {
  const TraceData t = richTrace();
  const std::string p = path("merged.json.gz");
  // The size returned is the JSON's before compression: the plain file's.
  QCOMPARE(exportChromeTrace(t, p), exportChromeTrace(t, path("plain.json")));
  const std::string bytes = readAll(p);
  QVERIFY(bytes.size() > 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
          static_cast<unsigned char>(bytes[1]) == 0x8b);
  compareEvents(t, importChromeTrace(p));
  compareEvents(t, importChromeTraceFromMemory(bytes, "memory"));
}

void TestChromeIo::runConfigRoundTrips() {
  TraceData t = richTrace();
  t.runConfig = R"({"model":{"type":"gpt","hidden_size":32},"data_parallel_size":2})";
  const auto paths = exportChromeTracePerRank(t, path("configured.json"));
  TraceData merged;
  for (const auto& p : paths) {
    const TraceData one = importChromeTrace(p);
    QCOMPARE(one.runConfig, t.runConfig);  // each rank's file holds it
    merged.merge(one);
  }
  QCOMPARE(merged.runConfig, t.runConfig);
  exportChromeTrace(richTrace(), path("unconfigured.json"));
  QVERIFY(importChromeTrace(path("unconfigured.json")).runConfig.empty());  // none recorded
}

void TestChromeIo::perRankFilesMergeBack() {
  const TraceData t = richTrace();
  const auto paths = exportChromeTracePerRank(t, path("run.json"));
  QCOMPARE(paths.size(), std::size_t{3});
  QCOMPARE(paths[2], path("run.rank2.json"));
  QCOMPARE(perRankPath("out/r{rank}.json.gz", 12), std::string("out/r12.json.gz"));
  TraceData merged;
  for (const auto& p : paths) {
    TraceData one = importChromeTrace(p);
    for (const Event& e : one.events) QCOMPARE(e.rank, one.events.front().rank);
    merged.merge(one);
  }
  merged.sortByTime();
  compareEvents(t, merged);
}

// The file reads like a Kineto trace: distributedInfo, process and thread names, "X"/"C"/"i"
// events, "s"/"f" flow pairs for correlated events with a flow source. The whole document is
// checked: metadata for rank 0 and its lanes 0 and stream 3 (1 << 20 | 3), the events in order,
// times as microseconds with three decimals, default fields left out, then the one flow.
void TestChromeIo::kinetoConventions() {
  TraceData t;
  t.worldSize = 2;
  Event launch;
  launch.name = "launch";
  launch.category = Category::Runtime;
  launch.startNs = 1000;
  launch.endNs = 1500;
  launch.correlation = 42;
  launch.flags = flag::kFlowSource;
  Event kernel = launch;
  kernel.name = "gemm";
  kernel.category = Category::Compute;
  kernel.lane = lane::gpuStream(3);
  kernel.startNs = 2000;
  kernel.endNs = 2500;
  kernel.flags = 0;
  Event mem;
  mem.name = "activation";
  mem.category = Category::Memory;
  mem.kind = EventKind::Counter;
  mem.bytes = 4096;
  t.events = {launch, kernel, mem};
  t.gpuDevices[0] = 0;
  const std::string p = path("kineto.json");
  const std::string expected =
      R"({"schemaVersion":1,"parascopeVersion":1,"displayTimeUnit":"ns",)"
      R"("distributedInfo":{"backend":"parascope","rank":0,"world_size":2},)"
      R"("clockResidualNs":-1,"traceEvents":[)"
      "\n"
      R"({"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"rank 0"}},)"
      "\n"
      R"({"ph":"M","name":"process_labels","pid":0,"tid":0,"args":{"labels":"rank 0"}},)"
      "\n"
      R"({"ph":"M","name":"process_sort_index","pid":0,"tid":0,"args":{"sort_index":0}},)"
      "\n"
      R"({"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"compute"}},)"
      "\n"
      R"({"ph":"M","name":"thread_sort_index","pid":0,"tid":0,"args":{"sort_index":0}},)"
      "\n"
      R"({"ph":"M","name":"thread_name","pid":0,"tid":1048579,"args":{"name":"GPU 0 stream 3"}},)"
      "\n"
      R"({"ph":"M","name":"thread_sort_index","pid":0,"tid":1048579,)"
      R"("args":{"sort_index":1048579}},)"
      "\n"
      R"({"ph":"X","cat":"runtime","name":"launch","pid":0,"tid":0,"ts":1.000,"dur":0.500,)"
      R"("args":{"correlation":42,"flow_source":1}},)"
      "\n"
      R"({"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":1048579,"ts":2.000,"dur":0.500,)"
      R"("args":{"correlation":42,"device":0,"stream":3}},)"
      "\n"
      R"({"ph":"C","cat":"memory","name":"activation","pid":0,"tid":0,"ts":0.000,)"
      R"("args":{"bytes":4096},"tags":{}},)"
      "\n"
      R"({"ph":"s","cat":"ac2g","name":"ac2g","id":1,"pid":0,"tid":0,"ts":1.000},)"
      "\n"
      R"({"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":1,"pid":0,"tid":1048579,"ts":2.000})"
      "\n]}\n";
  QCOMPARE(exportChromeTrace(t, p), expected.size());
  QCOMPARE(QString::fromStdString(readAll(p)), QString::fromStdString(expected));
}

void TestChromeIo::failedExportLeavesNoFile() {
  const std::string p = path("missing-dir/x.json");
  QVERIFY_THROWS_EXCEPTION(UserError, exportChromeTrace(richTrace(), p));
  QVERIFY(!QFile::exists(QString::fromStdString(p)));
  QVERIFY(QDir(dir_.path()).entryList({"*.tmp*"}, QDir::Files).isEmpty());
}

void TestChromeIo::badInput_data() {
  QTest::addColumn<QByteArray>("input");
  QTest::addColumn<QString>("expected");  // a fragment of the message, position included
  QTest::newRow("empty") << QByteArray("") << "t.json: not JSON";
  QTest::newRow("scalar") << QByteArray("42") << "expected a JSON object";
  QTest::newRow("no events") << QByteArray("{\"a\":1}") << "no \"traceEvents\" array";
  QTest::newRow("run config not an object")
      << QByteArray("{\"parascopeConfig\":[1],\"traceEvents\":[]}")
      << "\"parascopeConfig\" must be an object";
  QTest::newRow("truncated")
      << QByteArray("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":2,")
      << "truncated: the input ends inside an object or array at line 1, column 53 (byte 52), at "
         "the end of the input";
  QTest::newRow("truncated after newline")
      << QByteArray("{\"traceEvents\":[\n{\"ph\":\"X\",\"ts\":1},\n{\"ph\":\"X\",\"ts\":")
      << "line 3";
  QTest::newRow("event not object")
      << QByteArray("{\"traceEvents\":[1]}") << "each trace event must be a JSON object at line 1";
  QTest::newRow("ts string") << QByteArray("[{\"ph\":\"X\",\"ts\":\"soon\"}]")
                             << "\"ts\" must be a number of microseconds";
  QTest::newRow("ts huge") << QByteArray("[{\"ph\":\"X\",\"ts\":1e300}]")
                           << "\"ts\" must be a number of microseconds";
  QTest::newRow("ts too many digits")
      << QByteArray("[{\"ph\":\"X\",\"ts\":123456789012345678901234567890}]") << "\"ts\" must be";
  QTest::newRow("missing ts") << QByteArray("[{\"ph\":\"X\",\"dur\":1}]")
                              << "trace event without \"ts\" at line 1";
  QTest::newRow("negative dur") << QByteArray("[{\"ph\":\"X\",\"ts\":1,\"dur\":-1}]")
                                << "bad \"dur\"";
  QTest::newRow("pid object") << QByteArray("[{\"ph\":\"X\",\"ts\":1,\"pid\":{}}]")
                              << "\"pid\" and \"tid\" must be numbers or strings";
  QTest::newRow("peer out of range")
      << QByteArray("[{\"ph\":\"X\",\"ts\":1,\"args\":{\"peer\":99999999999}}]")
      << "\"peer\" is out of range";
  QTest::newRow("peer not integer")
      << QByteArray("[{\"ph\":\"X\",\"ts\":1,\"args\":{\"peer\":1.5}}]")
      << "\"peer\" must be an integer";
  QTest::newRow("ours with string pid")
      << QByteArray(
             "{\"parascopeVersion\":1,\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"pid\":\"a\"}]}")
      << "pid \"a\" is not an integer";
  QTest::newRow("unclosed string") << QByteArray("{\"traceEvents\":[{\"name\":\"abc}]}")
                                   << "truncated: the input ends inside a string";
  QTest::newRow("deep nesting") << QByteArray(5000, '[') << "t.json:";
  QTest::newRow("trailing garbage")
      << QByteArray("{\"traceEvents\":[]} x")
      << "data after the end of the trace at line 1, column 20 (byte 19)";
  QTest::newRow("bad gzip") << QByteArray("\x1f\x8b\x08\x00garbage", 12) << "gzip";
}

void TestChromeIo::badInput() {
  QFETCH(QByteArray, input);
  QFETCH(QString, expected);
  try {
    importChromeTraceFromMemory(std::string_view(input.constData(), input.size()), "t.json");
    QFAIL("no error");
  } catch (const UserError& e) {
    const QString message = QString::fromUtf8(e.what());
    QVERIFY2(message.contains(expected), qPrintable(message));
    QVERIFY2(message.startsWith("t.json"), qPrintable(message));
  }
}

void TestChromeIo::invalidUtf8NamesItsByte() {
  const std::string input = "[{\"ph\":\"X\",\"ts\":1,\n\"name\":\"ab\xc3(\"}]";
  try {
    importChromeTraceFromMemory(input, "bad.json");
    QFAIL("no error");
  } catch (const UserError& e) {
    QCOMPARE(QString(e.what()), QString("bad.json: invalid UTF-8 at line 2, column 11 (byte 29)"));
  }
}

void TestChromeIo::limits() {
  const std::string three =
      "[{\"ph\":\"X\",\"ts\":1},{\"ph\":\"X\",\"ts\":2},{\"ph\":\"X\",\"ts\":3}]";
  ImportOptions o;
  o.maxEvents = 2;
  QVERIFY_THROWS_EXCEPTION(UserError, importChromeTraceFromMemory(three, "x", o));
  try {
    importChromeTraceFromMemory(three, "x", o);
  } catch (const UserError& e) {
    QVERIFY2(QString(e.what()).contains("more than 2 events, the import limit at line 1"),
             e.what());
  }
  o = {};
  o.maxBytes = 10;
  try {
    importChromeTraceFromMemory(three, "x", o);
    QFAIL("no error");
  } catch (const UserError& e) {
    QVERIFY2(QString(e.what()).contains("more than the import limit of 10"), e.what());
  }
  QCOMPARE(importChromeTraceFromMemory(three, "x").events.size(), std::size_t{3});
}

void TestChromeIo::legacyArrayFormat() {
  const std::string legacy =
      "[{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 10, \"dur\": 5, \"tid\": 1, \"pid\": "
      "\"CPU functions\", \"args\": {}},\n {\"name\": \"gloo:all_reduce\", \"ph\": \"X\", \"ts\": "
      "20, \"dur\": 30, \"tid\": 2, \"pid\": \"CPU functions\", \"args\": {}}]";
  ImportOptions o;
  o.defaultRank = 3;
  const TraceData t = importChromeTraceFromMemory(legacy, "legacy", o);
  QCOMPARE(t.events.size(), std::size_t{2});
  QCOMPARE(t.events[0].rank, 3);
  QCOMPARE(t.events[0].startNs, std::int64_t{10'000});
  QCOMPARE(t.events[0].endNs, std::int64_t{15'000});
  QCOMPARE(static_cast<int>(t.events[0].category), static_cast<int>(Category::Compute));
  QCOMPARE(static_cast<int>(t.events[1].category), static_cast<int>(Category::Communication));
  QCOMPARE(t.events[0].lane, lane::kFirstThread);
  QCOMPARE(t.events[1].lane, lane::kFirstThread + 1);
  QCOMPARE(t.laneName(3, lane::kFirstThread), std::string("CPU functions / thread 1"));
}

// Unnamed threads of foreign files are labelled as Perfetto labels them: the process's name or
// id and the thread's id, without a JSON string's quotes; negative ids as written.
void TestChromeIo::unnamedThreadsAreLabelledReadably() {
  const std::string kineto =
      R"({"traceEvents":[)"
      R"({"ph":"M","name":"process_name","pid":10,"args":{"name":"python3"}},)"
      R"({"ph":"X","name":"ProfilerStep#1","pid":"Spans","tid":"PyTorch Profiler","ts":1,"dur":9},)"
      R"({"ph":"X","name":"aten::mm","pid":10,"tid":11,"ts":2,"dur":3},)"
      R"({"ph":"X","name":"sgemm","pid":0,"tid":-7,"ts":3,"dur":1}]})";
  const TraceData t = importChromeTraceFromMemory(kineto, "kineto");
  QCOMPARE(t.laneName(0, lane::kFirstThread), std::string("Spans / PyTorch Profiler"));
  QCOMPARE(t.laneName(0, lane::kFirstThread + 1), std::string("python3 / thread 11"));
  QCOMPARE(t.laneName(0, lane::kFirstThread + 2), std::string("process 0 / thread -7"));
}

// Args no Event field holds (Kineto's shapes, ids, launch parameters) stay with their event as
// JSON members in the file's order, rebuilt from the parse (strings re-escaped), through
// export, import and merge; ParaScope's own fields are not repeated there.
void TestChromeIo::foreignArgsAreKeptAndRoundTrip() {
  const std::string big(5000, 'x');
  const std::string kineto =
      R"({"traceEvents":[)"
      R"({"ph":"X","name":"aten::mm","pid":1,"tid":2,"ts":1,"dur":9,"args":{"External id":7,)"
      R"("Input Dims":[[2, 3], []],"Input type":["float",""],"Sequence number":-1.5e2,)"
      R"("correlation":11,"flow":{"id":3,"on":true,"x":null},"weird \"key\"":"line\nbreak"}},)"
      R"({"ph":"X","name":"k","pid":1,"tid":2,"ts":2,"dur":1,"args":{"a":1,"long":")" +
      big +
      R"(","deep":[[[[[[[[[[1]]]]]]]]]],"b":2}},)"
      R"({"ph":"i","name":"mark","pid":1,"tid":2,"ts":3,"s":"t","args":{"note":"here"}},)"
      R"({"ph":"X","name":"plain","pid":1,"tid":2,"ts":4,"dur":1,"args":{}}]})";
  const TraceData t = importChromeTraceFromMemory(kineto, "kineto");
  QCOMPARE(t.events.size(), std::size_t{4});
  const std::string mm = R"("External id":7,"Input Dims":[[2,3],[]],"Input type":["float",""],)"
                         R"("Sequence number":-1.5e2,"flow":{"id":3,"on":true,"x":null},)"
                         R"("weird \"key\"":"line\u000abreak")";
  QCOMPARE(std::string(t.argsOf(t.events[0])), mm);
  QCOMPARE(t.events[0].correlation, std::uint64_t{11});
  // Past 4 KiB members are counted, not kept; nesting deeper than 8 is left out.
  QCOMPARE(std::string(t.argsOf(t.events[1])),
           std::string(R"j("a":1,"b":2,"(args left out, over 4 KiB)":1)j"));
  QCOMPARE(std::string(t.argsOf(t.events[2])), std::string(R"("note":"here")"));
  QCOMPARE(t.events[3].args, std::uint32_t{0});

  const std::string p = path("args.json");
  exportChromeTrace(t, p);
  TraceData back = importChromeTraceFromMemory(readAll(p), "args.json");
  QCOMPARE(back.events.size(), t.events.size());
  for (std::size_t i = 0; i < t.events.size(); ++i)
    QCOMPARE(std::string(back.argsOf(back.events[i])), std::string(t.argsOf(t.events[i])));
  TraceData merged;
  merged.merge(richTrace());
  merged.merge(back);
  QCOMPARE(std::string(merged.argsOf(merged.events.back())),
           std::string(back.argsOf(back.events.back())));
  QCOMPARE(std::string(merged.argsOf(merged.events[merged.events.size() - 4])), mm);
}

void TestChromeIo::microsecondParsing() {
  auto ts = [](const char* number) {
    const std::string s = std::string("[{\"ph\":\"i\",\"ts\":") + number + "}]";
    return importChromeTraceFromMemory(s, "n").events.at(0).startNs;
  };
  QCOMPARE(ts("1682725898236567"), std::int64_t{1682725898236567000});
  QCOMPARE(ts("1212075548353.304"), std::int64_t{1212075548353304});
  QCOMPARE(ts("0.5"), std::int64_t{500});
  QCOMPARE(ts("2.0004"), std::int64_t{2000});
  QCOMPARE(ts("2.0005"), std::int64_t{2001});  // beyond ns: rounded
  QCOMPARE(ts("-3.25"), std::int64_t{-3250});
  QCOMPARE(ts("1.5e3"), std::int64_t{1'500'000});
}

QTEST_GUILESS_MAIN(TestChromeIo)
// The importer reads a window of text at a time and parses the events array in runs of whole
// events. Whatever the window (a byte, either side of the splitter's 64-byte blocks, a few KiB,
// the default), a trace of four ranks, escaped names and foreign args imports the same from
// memory, from a file and through gzip, and a fault is reported at the same place.
void TestChromeIo::windowsOfAnySizeImportTheSame() {
  SyntheticOptions shape;
  shape.events = 3000;
  shape.ranks = 4;
  shape.stages = 2;
  TraceData t = syntheticTrainingTrace(shape);
  TraceData rich = richTrace();
  t.merge(rich);
  // Names whose quotes, backslashes and brackets are the splitter's to get right.
  for (const char* name :
       {"say \"}\" then {", "ends in a backslash \\", "\\\"]}\\", "[{\"\\\\\"}]"}) {
    testing::add(t, {.rank = 1, .category = Category::Host, .start = 5, .end = 6, .name = name});
  }
  t.sortByTime();
  const std::string plain = path("windows.json"), packed = path("windows.json.gz");
  exportChromeTrace(t, plain);
  exportChromeTrace(t, packed);
  const std::string text = readAll(plain);
  const TraceData reference = importChromeTraceFromMemory(text, "windows.json");
  QCOMPARE(reference.events.size(), t.events.size());
  const std::string truncated = text.substr(0, text.size() * 2 / 3);
  QString fault;
  for (const std::size_t window :
       {std::size_t{1}, std::size_t{2}, std::size_t{63}, std::size_t{64}, std::size_t{65},
        std::size_t{4096}, ImportOptions{}.windowBytes}) {
    ImportOptions o;
    o.windowBytes = window;
    const QByteArray label = QByteArray::number(static_cast<qulonglong>(window));
    for (const TraceData& imported : {importChromeTraceFromMemory(text, "windows.json", o),
                                      importChromeTrace(plain, o), importChromeTrace(packed, o)}) {
      QVERIFY2(imported.firstDifference(reference).empty(),
               (label + ": " + imported.firstDifference(reference).c_str()).constData());
    }
    try {
      importChromeTraceFromMemory(truncated, "cut.json", o);
      QFAIL("no error");
    } catch (const UserError& e) {
      if (fault.isEmpty()) fault = e.what();
      QCOMPARE(QString(e.what()), fault);
    }
  }
  QVERIFY2(fault.contains("truncated: the input ends inside"), qPrintable(fault));

  // A fault inside an event, in the bytes after the events array, and invalid UTF-8: the line
  // the input has it on whatever the window (the brackets written around a run of events once
  // replaced the newline before it, and the message counted one line too few).
  const std::vector<std::pair<std::string, QString>> faults = {
      {"{\"traceEvents\":[\n{\"ph\":\"X\",\"ts\":1},\n{\"ph\":\"X\",\"ts\":\"x\"}\n]}",
       "at line 3, column "},
      {"[\n{\"name\":\"\xff\"}]", "invalid UTF-8 at line 2, column 10 (byte 11)"},
      {"{\"traceEvents\":[\n{\"ph\":\"X\",\"ts\":1}\n],\n\"x\": 1 2}", "at line 4, column 8"}};
  for (const auto& [input, where] : faults) {
    QString first;
    for (const std::size_t window : {std::size_t{1}, std::size_t{7}, ImportOptions{}.windowBytes}) {
      ImportOptions o;
      o.windowBytes = window;
      try {
        importChromeTraceFromMemory(input, "f.json", o);
        QFAIL("no error");
      } catch (const UserError& e) {
        QVERIFY2(QString(e.what()).contains(where), e.what());
        if (first.isEmpty()) first = e.what();
        QCOMPARE(QString(e.what()), first);
      }
    }
  }
}

#include "test_chrome_io.moc"
