"""What code outside __init__ may do with a tensor or a builtin (the allowlists of the compute
analysis, compute.py)."""

TENSOR_METADATA_METHODS = set("""size dim ndimension numel nelement stride is_contiguous data_ptr element_size
get_device storage_offset is_floating_point is_complex is_signed is_same_size dim_order""".split())
TENSOR_VIEW_METHODS = set("""view view_as unsqueeze squeeze transpose permute t narrow select unbind chunk
split split_with_sizes tensor_split movedim moveaxis swapaxes swapdims detach diagonal""".split())
# Reshapes: views where the strides allow, else a copy — data movement, as contiguous() is (the op guard
# and the kernel audit decide at run time whether a copy ran).
TENSOR_RESHAPE_METHODS = set("""reshape reshape_as flatten unflatten""".split())
TENSOR_CREATION_METHODS = {"new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full"}
# Data movement without arithmetic, allowed with a device argument only (compute.py moves_data_only).
TENSOR_MOVE_METHODS = {"contiguous", "cuda", "to"}
# Methods that change a tensor's precision or move it to the host: refused, with the allowed way named.
TENSOR_PRECISION_METHODS = set("""half float double bfloat16 int long short char byte bool type type_as cpu
""".split())
TENSOR_METADATA_ATTRS = set("""shape dtype device ndim is_cuda is_cpu layout requires_grad is_leaf is_sparse
is_quantized is_meta itemsize nbytes""".split())

# Methods of a Python list that never look at its elements' values (sort, index, count, remove compare
# them): allowed on a local list of tensors.
LIST_METHODS = {"append", "extend", "insert", "pop", "clear", "reverse", "copy"}
# Methods that put a value into a container: a container filled with a tensor holds a tensor.
CONTAINER_FILL_METHODS = {"append", "extend", "insert", "add", "update", "setdefault", "appendleft",
                          "extendleft"}

# Attributes of a torch.nn layer that hold configuration (numbers, tuples, strings), not tensors.
MODULE_CONFIG_ATTRS = set("""in_features out_features in_channels out_channels kernel_size stride padding
dilation groups padding_mode output_padding transposed eps momentum affine track_running_stats num_features
normalized_shape elementwise_affine num_groups num_channels embedding_dim num_embeddings padding_idx max_norm
norm_type scale_grad_by_freq sparse num_heads head_dim embed_dim kdim vdim batch_first dropout p inplace
negative_slope alpha beta threshold value lambd min_val max_val dim start_dim end_dim training
return_indices ceil_mode count_include_pad divisor_override output_size approximate upscale_factor
scale_factor mode align_corners hidden_size input_size num_layers bidirectional nonlinearity
proj_size""".split())

SAFE_BUILTINS = set("""len range int float bool str tuple list dict set frozenset min max abs round isinstance
issubclass enumerate zip reversed sorted sum any all divmod pow print super type callable repr format slice
map filter iter next hasattr NotImplementedError ValueError RuntimeError TypeError AssertionError Exception
object staticmethod classmethod property""".split())
BUILTINS_ON_TENSORS = {"len", "isinstance", "type", "tuple", "list", "zip", "enumerate", "print", "iter",
                       "callable", "super", "ValueError", "RuntimeError", "TypeError", "AssertionError",
                       "NotImplementedError", "Exception"}
STATE_BUILTINS = {"id", "hash"}
SCALAR_ANNOTATIONS = {"int", "float", "bool", "str"}

FORWARD = "forward"
INIT = "init"
# Expressions as deep as the parser accepts (a few thousand terms) are checked, not refused: Python
# calls between Python functions do not use the C stack (3.11+).
RECURSION_LIMIT = 20000
