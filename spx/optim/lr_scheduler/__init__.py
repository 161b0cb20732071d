"""spx.optim.lr_scheduler: torch's learning-rate schedulers over spx optimizers."""

from spx.optim.lr_scheduler.base import LRScheduler as LRScheduler
from spx.optim.lr_scheduler.base import _LRScheduler as _LRScheduler
from spx.optim.lr_scheduler.composite import ChainedScheduler as ChainedScheduler
from spx.optim.lr_scheduler.composite import SequentialLR as SequentialLR
from spx.optim.lr_scheduler.cosine import CosineAnnealingLR as CosineAnnealingLR
from spx.optim.lr_scheduler.cosine import (
    CosineAnnealingWarmRestarts as CosineAnnealingWarmRestarts,
)
from spx.optim.lr_scheduler.cyclic import CyclicLR as CyclicLR
from spx.optim.lr_scheduler.decay import ConstantLR as ConstantLR
from spx.optim.lr_scheduler.decay import ExponentialLR as ExponentialLR
from spx.optim.lr_scheduler.decay import LinearLR as LinearLR
from spx.optim.lr_scheduler.decay import MultiStepLR as MultiStepLR
from spx.optim.lr_scheduler.decay import PolynomialLR as PolynomialLR
from spx.optim.lr_scheduler.decay import StepLR as StepLR
from spx.optim.lr_scheduler.lambda_lr import LambdaLR as LambdaLR
from spx.optim.lr_scheduler.lambda_lr import MultiplicativeLR as MultiplicativeLR
from spx.optim.lr_scheduler.one_cycle import OneCycleLR as OneCycleLR
from spx.optim.lr_scheduler.plateau import ReduceLROnPlateau as ReduceLROnPlateau
