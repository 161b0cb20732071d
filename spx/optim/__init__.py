"""spx.optim: torch-shaped optimizers over optax, and learning-rate schedulers."""

from spx.optim import lr_scheduler as lr_scheduler
from spx.optim.adagrad import Adagrad as Adagrad
from spx.optim.adam import Adam as Adam
from spx.optim.adamw import AdamW as AdamW
from spx.optim.optimizer import Optimizer as Optimizer
from spx.optim.rmsprop import RMSprop as RMSprop
from spx.optim.sgd import SGD as SGD
