#include "ir/attr.h"

#include <cstring>
#include <type_traits>

namespace orion::ir {

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.nbytes() == 0 || std::memcmp(ca.raw(), cb.raw(), ca.nbytes()) == 0;
}

bool same_attr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, Tensor>) return same_tensor(x, y);
        else if constexpr (std::is_same_v<T, double>) return std::memcmp(&x, &y, sizeof x) == 0;
        else return x == y;
      },
      a);
}

}  // namespace orion::ir
