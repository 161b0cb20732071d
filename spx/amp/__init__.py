"""``spx.amp``: automatic mixed precision (mirrors ``torch.amp``).

* :class:`autocast` — regions where matrix products run in float16/bfloat16 and losses in
  float32 (:mod:`.autocast_mode`);
* :class:`GradScaler` — loss scaling for float16 gradients (:mod:`.grad_scaler`).
"""

from spx.amp.autocast_mode import autocast as autocast
from spx.amp.autocast_mode import get_autocast_dtype as get_autocast_dtype
from spx.amp.autocast_mode import is_autocast_enabled as is_autocast_enabled
from spx.amp.grad_scaler import GradScaler as GradScaler
