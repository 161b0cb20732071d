"""spx.nn.utils: gradient clipping, parameter/vector conversion, packed sequences (``rnn``),
weight and spectral norm, parametrizations (``parametrize``, ``parametrizations``) and
BatchNorm folding (``fusion``) (mirrors torch.nn.utils)."""

from spx.nn.utils import clip_grad as clip_grad
from spx.nn.utils import convert_parameters as convert_parameters
from spx.nn.utils import fusion as fusion
from spx.nn.utils import parametrizations as parametrizations
from spx.nn.utils import parametrize as parametrize
from spx.nn.utils import rnn as rnn
from spx.nn.utils.clip_grad import clip_grad_norm as clip_grad_norm
from spx.nn.utils.clip_grad import clip_grad_norm_ as clip_grad_norm_
from spx.nn.utils.clip_grad import clip_grad_value_ as clip_grad_value_
from spx.nn.utils.clip_grad import clip_grads_with_norm_ as clip_grads_with_norm_
from spx.nn.utils.clip_grad import get_total_norm as get_total_norm
from spx.nn.utils.convert_parameters import parameters_to_vector as parameters_to_vector
from spx.nn.utils.convert_parameters import vector_to_parameters as vector_to_parameters
from spx.nn.utils.fusion import fuse_conv_bn_eval as fuse_conv_bn_eval
from spx.nn.utils.fusion import fuse_conv_bn_weights as fuse_conv_bn_weights
from spx.nn.utils.fusion import fuse_linear_bn_eval as fuse_linear_bn_eval
from spx.nn.utils.fusion import fuse_linear_bn_weights as fuse_linear_bn_weights
from spx.nn.utils.spectral_norm import remove_spectral_norm as remove_spectral_norm
from spx.nn.utils.spectral_norm import spectral_norm as spectral_norm
from spx.nn.utils.weight_norm import remove_weight_norm as remove_weight_norm
from spx.nn.utils.weight_norm import weight_norm as weight_norm
