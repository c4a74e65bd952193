// The workbench executable against hostile input, as a child process under the offscreen
// platform with a settings and cache home of its own: a settings file holding a config nested
// 100000 levels deep, or that is a FIFO; a FIFO as --open, --screenshot or among the
// --screenshot-dir files; values the strategy panel's fields would clamp. Each ends at once with
// the exit status and the message stated, never a crash or a wait.
#include <sys/stat.h>
#include <unistd.h>
#include <QProcess>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include <string>

#include "core/common/error.h"
#include "core/config/config.h"
#include "tests/input_probes.h"

namespace {

struct Result {
  int code;     // -1: crashed, or killed at the time limit
  QString err;  // the lines that start "parascope: "
};

// What parascope-cli says of the default config with these overrides.
const QString kTrainIters =
    QStringLiteral("config: train_iters = -5 is out of range; allowed 1..1073741824");
const QString kDataParallel =
    QStringLiteral("config: data_parallel_size = 100000 is out of range; allowed 1..4096");

}  // namespace

class TestGuiInput : public QObject {
  Q_OBJECT
 private slots:
  void init();
  void deepLastConfigIsDropped();
  void settingsFifoIsNotRead();
  void traceFifoIsRefused();
  void screenshotFifoIsRefused();
  void screenshotWithoutTracesIsRefused();
  void tracesOpenBesideARun();
  void aTraceThatCannotBeReadFailsItsPictures();
  void badSwitchesAreRefusedBeforeTheRun();
  void screenshotDirLinksAndFifosAreRefused_data();
  void screenshotDirLinksAndFifosAreRefused();
  void clampedValuesAreRefused_data();
  void clampedValuesAreRefused();

 private:
  Result run(const QStringList& args);
  QString path(const QString& name) const { return home_->path() + QLatin1Char('/') + name; }
  QString settingsFile() const { return path(QStringLiteral("config/ParaScope/parascope.conf")); }

  std::unique_ptr<QTemporaryDir> home_;
};

void TestGuiInput::init() {
  home_ = std::make_unique<QTemporaryDir>();
  QVERIFY(home_->isValid());
  QVERIFY(QDir().mkpath(path(QStringLiteral("config/ParaScope"))));
}

Result TestGuiInput::run(const QStringList& args) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
  env.insert(QStringLiteral("XDG_CONFIG_HOME"), path(QStringLiteral("config")));
  env.insert(QStringLiteral("XDG_CACHE_HOME"), path(QStringLiteral("cache")));
  p.setProcessEnvironment(env);
  p.setWorkingDirectory(QStringLiteral(PARASCOPE_SOURCE_DIR));
  p.start(QStringLiteral(PARASCOPE), args);
  if (!p.waitForFinished(30000)) p.kill();
  p.waitForFinished(5000);
  // Only the workbench's own lines: Qt's platform plugin adds notes of its own.
  QString err;
  for (const QString& line : QString::fromUtf8(p.readAllStandardError()).split(QLatin1Char('\n'))) {
    if (line.startsWith(QStringLiteral("parascope: "))) err += line + QLatin1Char('\n');
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, err};
}

// The last session's config is read back under the config limits, dropped with a line saying so,
// and the default session is used: here refused for its train_iters, so nothing runs.
void TestGuiInput::deepLastConfigIsDropped() {
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += R"({"a":)";
  deep += "1" + std::string(100000, '}');
  {
    QSettings s(settingsFile(), QSettings::IniFormat);
    s.setValue(QStringLiteral("session/lastConfig"), QString::fromStdString(deep));
  }
  const Result r = run({QStringLiteral("--run"), QStringLiteral("train_iters=-5")});
  QCOMPARE(r.err, QStringLiteral("parascope: the last session's config in '") + settingsFile() +
                      QStringLiteral("': nested deeper than 32 levels at '") +
                      QStringLiteral("a.").repeated(31) +
                      QStringLiteral("a'; dropped, the default session is used\n"
                                     "parascope: ") +
                      kTrainIters + QLatin1Char('\n'));
  QCOMPARE(r.code, 2);
  QVERIFY(!QSettings(settingsFile(), QSettings::IniFormat)
               .contains(QStringLiteral("session/lastConfig")));
}

// Qt would open a FIFO there and wait for a writer before the window appeared.
void TestGuiInput::settingsFifoIsNotRead() {
  QCOMPARE(::mkfifo(settingsFile().toLocal8Bit().constData(), 0600), 0);
  const Result r = run({QStringLiteral("--run"), QStringLiteral("train_iters=-5")});
  QCOMPARE(r.err, QStringLiteral("parascope: settings file '") + settingsFile() +
                      QStringLiteral("': is a device, FIFO or socket, not a settings file; the "
                                     "saved layout and last config are not used\n"
                                     "parascope: ") +
                      kTrainIters + QLatin1Char('\n'));
  QCOMPARE(r.code, 2);
}

void TestGuiInput::traceFifoIsRefused() {
  const QString fifo = path(QStringLiteral("trace.json"));
  QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
  const Result r = run({QStringLiteral("--open"), fifo, QStringLiteral("--screenshot"),
                        path(QStringLiteral("shot.png"))});
  QCOMPARE(r.err, QStringLiteral("parascope: the traces were not shown: trace file '") + fifo +
                      QStringLiteral("': is a device, FIFO or socket, not a regular file\n"));
  QCOMPARE(r.code, 1);
  QVERIFY(QFileInfo(path(QStringLiteral("shot.png"))).size() > 0);  // the message, pictured
}

void TestGuiInput::screenshotFifoIsRefused() {
  const QString fifo = path(QStringLiteral("shot.png"));
  QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
  const QString trace =
      QStringLiteral(PARASCOPE_SOURCE_DIR "/tests/fixtures/kineto/gpu-rank0.json.gz");
  const Result r = run({QStringLiteral("--open"), trace, QStringLiteral("--screenshot"), fifo});
  QCOMPARE(r.err, QStringLiteral("parascope: --screenshot '") + fifo +
                      QStringLiteral("': is a device, FIFO or socket, not a regular file; name a "
                                     "regular file\n"));
  QCOMPARE(r.code, 2);
}

// Pictures of opened traces alone: taken once they are shown, the exit status 1 with the reason
// when one could not be read (the picture shows the error too).
void TestGuiInput::aTraceThatCannotBeReadFailsItsPictures() {
  const QString missing = path(QStringLiteral("missing.json"));
  const Result r = run({QStringLiteral("--open"), missing, QStringLiteral("--screenshot-dir"),
                        path(QStringLiteral("shots"))});
  QVERIFY2(r.err.contains(QStringLiteral("parascope: Cannot analyse the trace: cannot open trace "
                                         "file '") +
                          missing + QStringLiteral("': No such file or directory")),
           qPrintable(r.err));
  QCOMPARE(r.code, 1);
  QVERIFY(QFileInfo::exists(path(QStringLiteral("shots/view-compare.png"))));
}

// Traces opened beside a run show in tabs of their own (the run keeps its timeline): the run's
// pictures are taken once the run's trace is shown, not when the opened one is.
void TestGuiInput::tracesOpenBesideARun() {
  const QString trace =
      QStringLiteral(PARASCOPE_SOURCE_DIR "/tests/fixtures/kineto/gpu-rank0.json.gz");
  const Result r =
      run({QStringLiteral("--open"), trace, QStringLiteral("--run"),
           QStringLiteral("--screenshot-dir"), path(QStringLiteral("shots")),
           QStringLiteral("--quit-after-steps"), QStringLiteral("1"), QStringLiteral("--config"),
           QStringLiteral(PARASCOPE_SOURCE_DIR "/resources/configs/default.json"),
           QStringLiteral("model.num_layers=2"), QStringLiteral("model.hidden_size=32"),
           QStringLiteral("model.num_attention_heads=2"), QStringLiteral("model.context_length=16"),
           QStringLiteral("train_micro_batch_size_per_gpu=2")});
  QCOMPARE(r.err, QString());
  QCOMPARE(r.code, 0);
  QVERIFY(QFileInfo::exists(path(QStringLiteral("shots/window.png"))));
  QVERIFY(QFileInfo::exists(path(QStringLiteral("shots/view-memory.png"))));
}

// --switch is planned as train --switch plans it, every target checked before anything runs or
// is written, and only with a run.
void TestGuiInput::badSwitchesAreRefusedBeforeTheRun() {
  Result r = run({QStringLiteral("--switch"), QStringLiteral("2:data_parallel_size=2")});
  QCOMPARE(r.err, QStringLiteral("parascope: --switch needs a run: give --run, or --screenshot-dir "
                                 "without --open\n"));
  QCOMPARE(r.code, 2);
  r = run({QStringLiteral("--open"), QStringLiteral(","), QStringLiteral("--screenshot-dir"),
           path(QStringLiteral("shots"))});
  QCOMPARE(r.err, QStringLiteral("parascope: --open ',' names no trace file\n"));
  QCOMPARE(r.code, 2);
  r = run({QStringLiteral("--screenshot-dir"), path(QStringLiteral("shots")),
           QStringLiteral("--switch"), QStringLiteral("2:no_such_key=1")});
  QVERIFY2(r.err.startsWith(QStringLiteral("parascope: --switch '2:no_such_key=1': ")),
           qPrintable(r.err));
  QCOMPARE(r.code, 2);
  QVERIFY(!QFileInfo::exists(path(QStringLiteral("shots"))));
  r = run({QStringLiteral("--run"), QStringLiteral("--switch"), QStringLiteral("two:x=1")});
  QCOMPARE(r.err,
           QStringLiteral("parascope: --switch 'two:x=1': expected STEP:key=value[,key=value"
                          "...], e.g. 20:tensor_model_parallel_size=2,data_parallel_size=1\n"));
  QCOMPARE(r.code, 2);
}

void TestGuiInput::screenshotWithoutTracesIsRefused() {
  const Result r = run({QStringLiteral("--screenshot"), path(QStringLiteral("shot.png"))});
  QCOMPARE(r.err, QStringLiteral("parascope: --screenshot needs traces to show: --open FILE\n"));
  QCOMPARE(r.code, 2);
}

void TestGuiInput::screenshotDirLinksAndFifosAreRefused_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<bool>("link");
  QTest::addColumn<QString>("why");
  QTest::newRow("window.png a link")
      << "window.png" << true << "is a symbolic link; name the file it points to";
  QTest::newRow("view-log.png a FIFO")
      << "view-log.png" << false
      << "is a device, FIFO or socket, not a regular file; name a regular file";
}

// Judged before the session runs: a link would have been written through (the file it points
// to replaced), a FIFO waited on after the run.
void TestGuiInput::screenshotDirLinksAndFifosAreRefused() {
  QFETCH(QString, name);
  QFETCH(bool, link);
  QFETCH(QString, why);
  const QString dir = path(QStringLiteral("shots"));
  QVERIFY(QDir().mkpath(dir));
  const QString target = dir + QLatin1Char('/') + name;
  const QString victim = path(QStringLiteral("victim.txt"));
  parascope::test::write(victim.toStdString(), "kept");
  if (link) {
    QCOMPARE(::symlink(victim.toLocal8Bit().constData(), target.toLocal8Bit().constData()), 0);
  } else {
    QCOMPARE(::mkfifo(target.toLocal8Bit().constData(), 0600), 0);
  }
  const Result r = run({QStringLiteral("--screenshot-dir"), dir});
  QCOMPARE(r.err, QStringLiteral("parascope: --screenshot-dir '") + target + QStringLiteral("': ") +
                      why + QLatin1Char('\n'));
  QCOMPARE(r.code, 2);
  QFile kept(victim);
  QVERIFY(kept.open(QIODevice::ReadOnly));
  QCOMPARE(kept.readAll(), QByteArray("kept"));
}

void TestGuiInput::clampedValuesAreRefused_data() {
  QTest::addColumn<QString>("assignment");
  QTest::addColumn<QString>("message");
  QTest::newRow("train_iters=-5") << "train_iters=-5" << kTrainIters;
  QTest::newRow("data_parallel_size=100000") << "data_parallel_size=100000" << kDataParallel;
}

// The CLI's own message for the same config (checked against its validator here), and nothing
// runs.
void TestGuiInput::clampedValuesAreRefused() {
  QFETCH(QString, assignment);
  QFETCH(QString, message);
  nlohmann::json doc =
      parascope::readJsonFile(PARASCOPE_SOURCE_DIR "/resources/configs/default.json");
  parascope::applyOverride(doc, assignment.toStdString());
  QCOMPARE(parascope::test::userErrorOf([&] { parascope::parseTrainConfig(doc); }), message);
  const Result r = run({QStringLiteral("--run"), assignment});
  QCOMPARE(r.err, QStringLiteral("parascope: ") + message + QLatin1Char('\n'));
  QCOMPARE(r.code, 2);
}

QTEST_GUILESS_MAIN(TestGuiInput)
#include "test_gui_input.moc"
