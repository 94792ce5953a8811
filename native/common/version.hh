#pragma once
#define GPUMPI_VERSION "0.1.0"
