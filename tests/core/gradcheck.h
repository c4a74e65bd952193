// Helpers for checking analytic gradients against central finite differences in double
// precision: loss(x) = sum(f(x) * R) for a fixed random R, so dloss/dout = R.
#pragma once

#include <QtTest>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace parascope::testing {

inline std::vector<double> randomVector(std::size_t n, unsigned seed, double scale = 1.0) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Compares analytic[i] with (loss(x + h e_i) - loss(x - h e_i)) / 2h for every i. loss reads x.
inline void expectGradient(const char* what, std::vector<double>& x,
                           const std::vector<double>& analytic, const std::function<double()>& loss,
                           double tolerance = 1e-6) {
  QCOMPARE(analytic.size(), x.size());
  const double h = 1e-5;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = loss();
    x[i] = saved - h;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2 * h);
    const double err = std::fabs(numeric - analytic[i]);
    if (err > tolerance * (1.0 + std::fabs(numeric))) {
      QFAIL(qPrintable(QString("%1: element %2 analytic %3 numeric %4")
                           .arg(what)
                           .arg(i)
                           .arg(analytic[i], 0, 'g', 12)
                           .arg(numeric, 0, 'g', 12)));
    }
  }
}

}  // namespace parascope::testing
