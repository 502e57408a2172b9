#include "lower/lower.h"    // rejected: app links upper only
#include "middle/middle.h"  // allowed: upper links middle PUBLIC
#include "stray/stray.h"    // rejected: no target exports it
#include "upper/upper.h"

int main() { return upper() + middle() + lower(); }
