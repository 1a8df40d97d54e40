// Stand-in for the header upstream's CMake generates (generate_export_header).
#pragma once

#define PROMETHEUS_CPP_CORE_EXPORT __attribute__((visibility("default")))
#define PROMETHEUS_CPP_CORE_NO_EXPORT __attribute__((visibility("hidden")))
#define PROMETHEUS_CPP_CORE_DEPRECATED __attribute__((__deprecated__))
#define PROMETHEUS_CPP_CORE_DEPRECATED_EXPORT PROMETHEUS_CPP_CORE_EXPORT PROMETHEUS_CPP_CORE_DEPRECATED
