#include "upper/upper.h"

#include "lower/lower.h"  // rejected: lower is PRIVATE to middle

int upper() { return middle() + lower(); }
