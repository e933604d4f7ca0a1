// Plain double references for ops/activation.h: the textbook formulas, element by element.
#pragma once
#include <vector>

#include "ops/activation.h"

namespace keel::ref {

double activation(ops::Activation f, double x);
std::vector<double> activation(ops::Activation f, const std::vector<double>& x);
// Softmax of each row of `cols` elements.
std::vector<double> softmax(const std::vector<double>& x, int64_t cols);

}  // namespace keel::ref
