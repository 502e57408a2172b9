// Layering fixture: links lower PRIVATE, yet its header includes lower.h.
#pragma once

#include "lower/lower.h"  // rejected: lower is linked PRIVATE

int middle();
