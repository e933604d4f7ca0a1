// How ops reach their backend. An op takes the Backend it runs on; its workspace comes from backend.pool()
// and is released before it returns, and `<op>_workspace_bytes(shapes)` states exactly that amount ahead of
// time.
#pragma once
#include "backend/backend.h"
#include "core/tensor.h"
