/* ftl_version(): the version compiled into this library, so a program (or the Python package) can tell
 * which libftl it loaded, not only which header it was built against. */
#include "ftl/version.h"

const char *ftl_version(void) { return FTL_VERSION_STRING; }
