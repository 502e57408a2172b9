// Layering fixture: a header in no target.
#pragma once
