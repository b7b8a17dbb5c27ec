// Sequential reference executor and Session (see session.h).
#include "engine/session.h"
