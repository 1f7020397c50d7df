// SPDX-License-Identifier: BSD-3-Clause
// Compile-time agreement between the CPU twin's platform table (twin/include/twin/platform.h), which
// every kernel runs against here, and the facts the operator fixes: the tiling's reference platform
// (reference_platform.h) and the kernel's granules (rms_norm_backward_ub_layout.h). Built into the
// operator's extension, so a table and a constant that drift apart stop the build. The twin itself
// never includes the operator.
#include "rms_norm_backward_ub_layout.h"
#include "tiling/reference_platform.h"
#include "twin/platform.h"

namespace {

namespace ref = rmsnorm_backward::tiling::reference_platform;
namespace layout = rmsnorm_backward::layout;

constexpr bool SameName(const char *a, const char *b)
{
    for (; *a != '\0' && *a == *b; ++a, ++b) {
    }
    return *a == *b;
}

constexpr const twin::SocInfo &Soc(const char *name)
{
    for (const twin::SocInfo &soc : twin::kSocTable) {
        if (SameName(soc.name, name)) return soc;
    }
    return twin::kSocTable[0];
}

constexpr uint32_t MostVectorCores()
{
    uint32_t most = 0;
    for (const twin::SocInfo &soc : twin::kSocTable) most = soc.vector_cores > most ? soc.vector_cores : most;
    return most;
}

constexpr const twin::SocInfo &kReference = Soc(ref::kSocName);
static_assert(SameName(kReference.name, ref::kSocName), "the twin's table must hold the reference SoC");
static_assert(kReference.vector_cores == ref::kVectorCores && MostVectorCores() == ref::kVectorCores,
              "the reference platform's cores must be the twin's reference SoC's and the most of any SoC");
static_assert(kReference.ub_bytes == ref::kUbBytes, "UB bytes: the reference platform against the twin's table");
static_assert(kReference.ub_reserved_bytes <= ref::kUbReservedBytes,
              "the UB the tiling keeps free must cover what the twin's table forbids a kernel");
static_assert(kReference.l2_bytes_per_cycle == ref::kL2BytesPerCycle,
              "the L2 rate: the reference platform against the twin's table");
static_assert(kReference.ddr_bytes_per_cycle == ref::kGmToUbBytesPerCycle,
              "the GM-to-UB rate: the reference platform against the twin's table");
static_assert(twin::kUbBlockBytes == layout::kBlockBytes, "the block bytes: the kernel's against the twin's");
static_assert(twin::kRepeatBytes == layout::kRepeatBytes, "the repeat bytes: the kernel's against the twin's");
static_assert(twin::kEventIdsPerEvent == layout::kEventIdsPerEvent,
              "event ids per event: the kernel's against the twin's");

}  // namespace
