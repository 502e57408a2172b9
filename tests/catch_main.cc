// The main of every unit-test binary, for Catch2 v2 and v3 alike.
#define CATCH_CONFIG_RUNNER  // v2: declare Catch::Session, define no main
#include "tests/catch.h"

int main(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
