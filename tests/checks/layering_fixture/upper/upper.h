// Layering fixture: links middle PUBLIC.
#pragma once

#include "middle/middle.h"

int upper();
