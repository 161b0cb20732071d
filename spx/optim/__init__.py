"""spx.optim: torch-shaped optimizers over optax, learning-rate schedulers and SWA/EMA utils."""

from spx.optim import lr_scheduler as lr_scheduler
from spx.optim import swa_utils as swa_utils
from spx.optim.adadelta import Adadelta as Adadelta
from spx.optim.adagrad import Adagrad as Adagrad
from spx.optim.adam import Adam as Adam
from spx.optim.adamax import Adamax as Adamax
from spx.optim.adamw import AdamW as AdamW
from spx.optim.asgd import ASGD as ASGD
from spx.optim.lbfgs import LBFGS as LBFGS
from spx.optim.nadam import NAdam as NAdam
from spx.optim.optimizer import Optimizer as Optimizer
from spx.optim.radam import RAdam as RAdam
from spx.optim.rmsprop import RMSprop as RMSprop
from spx.optim.rprop import Rprop as Rprop
from spx.optim.sgd import SGD as SGD
