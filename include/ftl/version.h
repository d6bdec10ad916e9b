/* The version of the ftl API, the one place it is written: CMake's project() and the Python package read
 * it from here. FTL_VERSION_NUM compares as a number (0.2.0 is 200). ftl_version() says which library was
 * loaded at run time, which may be newer than the header a program was compiled against. */
#ifndef FTL_VERSION_H
#define FTL_VERSION_H

#include "ftl/export.h"

#define FTL_VERSION_MAJOR 0
#define FTL_VERSION_MINOR 4
#define FTL_VERSION_PATCH 6
#define FTL_VERSION_STRING "0.4.6"
#define FTL_VERSION_NUM (FTL_VERSION_MAJOR * 10000 + FTL_VERSION_MINOR * 100 + FTL_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* "0.3.2": the version of the library this program runs against. */
FTL_API const char *ftl_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FTL_VERSION_H */
