// Off Apple platforms there is no Neural Engine to open; saying so at the point of use keeps
// `--device ane` an ordinary error rather than a link failure.
#include "core/error.h"
#include "device/ane_bridge_apple.h"

namespace orion::device {

std::unique_ptr<AneDevice> open_ane_device(AneBridgeOptions) {
  throw Error(
      "device ane: the Apple Neural Engine is reachable only on macOS on Apple silicon; this build has no ane "
      "device (use ane-sim)");
}

}  // namespace orion::device
