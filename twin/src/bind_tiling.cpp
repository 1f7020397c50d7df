// Python bindings of the plain tiling (compute_tiling and friends).
// Placeholder created by the RUNTIME engineer so the extension links: the KERNEL engineer fills it.
#include <pybind11/pybind11.h>

void BindTiling(pybind11::module_ &m)
{
    (void)m;
}
