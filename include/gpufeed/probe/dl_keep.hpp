#pragma once
// Under the sanitizers, libraries that gpufeed or hwloc dlclose() stay mapped
// (RTLD_NODELETE). Otherwise LeakSanitizer reports, as "<unknown module>",
// memory that only the unloaded library's globals still referenced (hwloc's
// PCI plugin, GPU runtimes probed by dlopen): noise, not gpufeed leaks.
#include <dlfcn.h>

namespace gpufeed {

#ifdef GPUFEED_SANITIZE_BUILD
inline constexpr int kDlopenKeep = RTLD_NODELETE;
#else
inline constexpr int kDlopenKeep = 0;
#endif

// Pins the plugins hwloc loaded (a no-op outside sanitizer builds).
void keep_hwloc_plugins_loaded();

}  // namespace gpufeed
