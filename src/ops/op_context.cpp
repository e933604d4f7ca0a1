#include "ops/op_context.h"
