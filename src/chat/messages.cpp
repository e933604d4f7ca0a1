#include "chat/messages.h"
