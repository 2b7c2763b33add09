# views strings (en). Keep the ids identical in en/ and tr/.

## Shared by the views: errors of an invalid scenario and their fixes.
list-or = or
invalid-choice = Invalid choice: { $error }
err-hidden-heads = hidden size { $hidden } cannot be split into { $heads } heads: hidden must be a multiple of heads (head size = hidden / heads).
valid-heads = Head counts that divide the hidden size: { $list }.
use-heads = Use { $heads } heads
nearest-tp = Nearest valid TP sizes: { $list }
use-tp = Use TP={ $tp }
err-zero = { $field } must be at least 1 (got 0)
err-over-limit = { $field } { $value } is over the limit of { $max }; use a { $field } of at most { $max }
err-tp-range = TP size must be between 1 and { $max } (got { $tp })
err-heads-tp = { $heads } heads cannot be split over { $tp } GPUs: each GPU must hold whole heads (the heads must divide evenly by the GPUs); valid TP sizes: { $valid }
err-ffn-tp = FFN width { $ffn } cannot be split over { $tp } GPUs: fc1's columns and fc2's rows must divide evenly (the FFN width must divide evenly by the GPUs); valid TP sizes: { $valid }
err-too-large = this scenario needs about { $needed } of tensors, over the { $limit } guard; reduce seq, batch, hidden or layers
err-seq-tp = sequence parallelism splits the sequence over the GPUs: seq { $seq } cannot be split over { $tp } GPUs (the sequence length must divide evenly by the GPUs); valid TP sizes: { $valid }; or make seq a multiple of { $tp }
err-kv-heads = { $kv } KV heads cannot serve { $heads } query heads: each KV head must serve the same number of query heads (the query heads must divide evenly by the KV heads); valid KV head counts: { $valid }
err-kv-tp = { $kv } KV heads cannot be spread over { $tp } GPUs: each GPU needs whole KV heads (the KV heads divide evenly by the GPUs) or an equal share of one (the GPUs divide evenly by the KV heads); valid TP sizes: { $valid }
err-dtype = dtype { $dtype } cannot run on the CPU engine; use f32 or f64

## Side bar.
view-playground = Playground
view-step = Walkthrough
view-collectives = Collectives
view-timeline = Timeline
view-memory = Memory
view-verify = Verify
view-precision = Precision
view-vocab = Vocabulary
view-train = Train
view-serve = Serve
view-planner = Planner
view-lessons = Lessons
view-quiz = Quiz
view-gpu = GPU
theme-light = Light
theme-dark = Dark
presenter-mode = Presenter mode (F11)
presenter-hint = Full screen and large type. Space play/pause, Left/Right arrow or PageUp/PageDown step, Home restart, 1-8 set TP.
side-scenario = hidden { $hidden }, { $heads } heads, TP={ $tp }, { $dtype }
export-png = Export PNG
export-hint = Saves the window as a PNG named after the view and what it shows, in { $dir }.
export-saved = Saved { $path }
export-failed = Export failed: { $error }

## Playground.
pg-title = Playground: how one layer is split
pg-hide-activations = Hide activations
pg-preset = Preset:
pg-hidden = hidden
pg-heads = heads
pg-kv-heads = KV heads
pg-kv-hint = Grouped-query attention: fewer key/value heads than query heads, each shared by a group of query heads. Equal to heads: plain multi-head attention.
pg-ffn = ffn
pg-seq = seq
pg-batch = batch
pg-layers = layers
pg-tp-field = TP (up to 64)
pg-dtype = dtype
pg-algorithm = algorithm
pg-sp = sequence parallel
pg-sp-hint = Korthikanti et al. 2022: LayerNorm, bias and residual work on 1/TP of the tokens; each all-reduce becomes a reduce-scatter plus an all-gather.
pg-note-copy = { " " }(copy { $copy } of { $copies }: TP > KV heads, so each KV head is replicated, as vLLM does)
pg-note-qkv-gqa = Q columns of heads { $first }-{ $last }, K and V columns of KV head(s) { $kvfirst }-{ $kvlast }{ $copy } (column-parallel)
pg-note-qkv = Q, K and V columns of heads { $first }-{ $last } (column-parallel)
pg-note-out = rows of heads { $first }-{ $last } (row-parallel: the output is a partial sum)
pg-note-fc1 = a block of columns (column-parallel; GeLU stays local)
pg-note-fc2 = a block of rows (row-parallel: the output is a partial sum)
pg-split-cols = split by columns
pg-split-rows = split by rows
pg-replicated = replicated
pg-shard-hover = GPU { $rank }: { $name } shard [{ $rows }, { $cols }], { $bytes }
    { $note }
pg-grid-cell = grid cell = { $cell }x{ $cell } elements
pg-matrices-a11y = Weight matrices over { $tp } GPUs: { $summary }
pg-gqa-head = grouped-query attention: { $heads } query heads share { $kv } KV heads ({ $per } per KV head)
pg-gqa-holders = GPU { $gpus } hold KV head { $k }
pg-gqa-replicated = { $head }; TP={ $tp } > { $kv } KV heads, so each KV head is replicated on { $copies } GPUs (vLLM's rule: the GPUs divide evenly by the KV heads): { $holders }. The copies' K/V gradients are all-reduced within each group.
pg-gqa-split = { $head }; each GPU holds { $per } whole KV head(s) (Megatron-LM's rule: the KV heads divide evenly by the GPUs), no copies.
pg-activations = Activations on each GPU (layer 0, forward)
pg-each-of = Each of
pg-holds = holds:
pg-col-op = op
pg-col-output = output
pg-col-bytes = bytes
pg-col-kind = kind
pg-kind-partial = partial sum
pg-kind-split = split 1/TP
pg-kind-replicated = replicated
pg-kind-tokens = split by tokens 1/TP
pg-kinds-explained = split 1/TP: each GPU holds its own columns. partial sum: each GPU holds one term of the full result; the g all-reduce adds them, then the bias is added once. split by tokens (sequence parallel): each GPU holds 1/TP of the token rows; g is a reduce-scatter and f an all-gather.

## Timeline.
tl-title = Timeline: compute and communication per GPU
tl-source-proportional = Times are proportional to FLOPs and bytes at nominal rates: compare bars, not seconds.
tl-source-model = Times are modeled by tplab's cost model (roofline compute, alpha-beta links; a TP group over 8 GPUs crosses InfiniBand).
tl-source-measured = Times were measured on a GPU with CUDA events.
tl-times = times
tl-times-proportional = proportional to FLOPs and bytes
tl-times-model = cost model: { $gpu }
tl-too-many = Too many events to draw at once; layer:
tl-makespan = Makespan { $makespan } µs, of which { $comm } µs ({ $share }%) is communication every GPU waits for.
tl-axis-time = time (µs)
tl-compute = compute
tl-compute-own-colour = compute (in each GPU's colour)
tl-communication = communication
tl-backward-begins = backward pass begins
tl-bar-hover = { $name }
    starts at { $start } µs, takes { $duration } µs, ends at { $end } µs

## Memory.
mem-title = Memory per GPU as TP grows
mem-weights = weights
mem-gradients = gradients
mem-optimizer = optimizer (Adam m, v)
mem-activations = activations
mem-intro =
    { $layers ->
        [one] { $layers } layer
       *[other] { $layers } layers
    } in { $dtype }, training with Adam. Weights, gradients and optimizer states split by 1/TP, except the LayerNorms and row-parallel biases; the LayerNorm activations stay replicated, so the total stops shrinking at 1/TP.
mem-now = now
mem-axis = MiB per GPU
mem-unsharded = unsharded total (TP=1)
mem-total = total per GPU
mem-vs-unsharded = vs unsharded
mem-percent = { $percent }%

## Walkthrough chrome.
st-title = Walkthrough: one layer, step by step
st-empty = The trace is empty.
st-play = Play
st-pause = Pause
st-key-space = Space
st-previous = Previous step
st-key-left = Left arrow key (or PageUp)
st-next = Next step
st-key-right = Right arrow key (or PageDown)
st-restart = Restart
st-step = step
st-speed = steps/s
st-issued = issued so far: forward { $f }, backward { $b }
st-counter = all-reduces this layer: forward { $f }, backward { $b }
st-counter-kv = ; plus all-reduces of replicated KV heads' gradients, one per group of copies: { $kv }
st-counter-other = ; all-gathers and reduce-scatters: forward { $f }, backward { $b }
st-describe = Step { $n }/{ $total } · layer { $layer } · { $pass } · { $label }, inputs { $inputs }, output [{ $rows }, { $cols }]
st-strip-a11y = Layer { $layer } ops with f and g marked; current: { $current }
st-plan-walk-student = A student's plan (no name) on { $tp } GPUs: { $splits }. The design lab's small layer: hidden { $hidden }, { $heads } heads, { $tokens } tokens.
st-plan-walk-presenter = Your plan on { $tp } GPUs: { $splits }. The design lab's small layer: hidden { $hidden }, { $heads } heads, { $tokens } tokens (not the scenario of the other views).
st-plan-walk = Your plan on { $tp } GPUs: { $splits }. The design lab's small layer: hidden { $hidden }, { $heads } heads, { $tokens } tokens (the side bar's scenario is not this one).
st-plan-refused-now = Your plan, as it is now in the design lab, is refused by the rules, so it has nothing to step through. Fix it there, or step through Megatron's split.
st-plan-sp = sequence parallelism
st-plan-back = Back to the design lab
st-plan-megatron = Megatron's split
st-strip-slice = slice

## Ops of the block program in words (Turkish only needs them; English uses the engine's labels).
op-ln1 = LayerNorm 1
op-attn-f = f before attention
op-attn-qkv = QKV projection (column-parallel)
op-attn-core = attention on this GPU's heads
op-attn-out = output projection (row-parallel)
op-attn-g = g after attention
op-attn-bias-residual = output bias and residual
op-ln2 = LayerNorm 2
op-mlp-f = f before the MLP
op-mlp-fc1 = fc1 (column-parallel)
op-mlp-gelu = GeLU (local)
op-mlp-fc2 = fc2 (row-parallel)
op-mlp-g = g after the MLP
op-mlp-bias-residual = fc2 bias and residual
op-mlp-bias-residual-bwd = fc2 bias gradient
op-mlp-g-bwd = g after the MLP, backward (identity)
op-mlp-fc2-bwd = fc2 gradients
op-mlp-gelu-bwd = GeLU gradient
op-mlp-f-bwd-gather = LayerNorm 2 output gathered again
op-mlp-fc1-bwd = fc1 gradients
op-mlp-f-bwd = f before the MLP, backward: input gradient summed
op-ln2-bwd = LayerNorm 2 gradient
op-attn-bias-residual-bwd = output bias gradient
op-attn-g-bwd = g after attention, backward (identity)
op-attn-out-bwd = output projection gradients
op-attn-core-bwd = attention gradient
op-attn-f-bwd-gather = LayerNorm 1 output gathered again
op-attn-qkv-bwd = QKV projection gradients
op-attn-kv-grads = K/V copies' gradients summed
op-attn-f-bwd = f before attention, backward: input gradient summed
op-ln1-bwd = LayerNorm 1 gradient
op-sp-grads = LayerNorm and bias gradients summed
op-embed-lookup = embedding lookup (its vocabulary rows)
op-embed-g = embeddings summed
op-lm-head = LM head (its vocabulary columns)
op-ce-local = cross-entropy statistics on its columns
op-ce-max = row maximum across GPUs
op-ce-sumexp = sum of exponentials across GPUs
op-ce-target = target logit across GPUs
op-ce-bwd = cross-entropy gradient
op-lm-head-bwd = LM head gradients
op-lm-head-f-bwd = LM head input gradient summed
op-embed-bwd = embedding gradient (its rows)
op-block-input-move = block input redistributed
op-attn-qkv-move = QKV redistributed
op-attn-core-move = attention output redistributed
op-attn-residual-move = residual stream redistributed
op-mlp-fc1-move = fc1 output redistributed
op-mlp-gelu-move = GeLU output redistributed
op-block-output-move = block output redistributed
op-attn-qkv-bias = QKV bias added
op-attn-out-bias = output projection bias added
op-mlp-fc1-bias = fc1 bias added
op-mlp-fc2-bias = fc2 bias added
op-attn-qkv-bias-bwd = QKV bias gradient
op-attn-out-bias-bwd = output projection bias gradient
op-mlp-fc1-bias-bwd = fc1 bias gradient
op-mlp-fc2-bias-bwd = fc2 bias gradient
op-block-output-move-bwd = output gradient redistributed
op-mlp-gelu-move-bwd = GeLU output gradient redistributed
op-mlp-fc1-move-bwd = fc1 output gradient redistributed
op-attn-residual-move-bwd = residual stream gradient redistributed
op-attn-core-move-bwd = attention output gradient redistributed
op-attn-qkv-move-bwd = QKV gradient redistributed
op-block-input-move-bwd = input gradient redistributed
op-grads-gather = a bias gradient gathered
op-ln1-move = LayerNorm 1 output redistributed
op-attn-out-move = output projection's output redistributed
op-ln2-move = LayerNorm 2 output redistributed
op-mlp-fc2-move = fc2 output redistributed
op-ln1-move-bwd = LayerNorm 1 output gradient redistributed
op-attn-out-move-bwd = output projection's output gradient redistributed
op-ln2-move-bwd = LayerNorm 2 output gradient redistributed
op-mlp-fc2-move-bwd = fc2 output gradient redistributed
op-linear-as = { $op } ({ $how })
op-split-column = column-parallel
op-split-row = row-parallel
op-split-whole = whole on every GPU
op-split-sequence = on its tokens
op-base-attn-qkv = QKV projection
op-base-attn-out = output projection
op-base-mlp-fc1 = fc1
op-base-mlp-fc2 = fc2
op-identity-half = identity, the other half of an all-reduce (no communication)
op-attn-core-all = attention on every head (each GPU computes them all)

## Verify.
vf-title = Verify: the sharded run against the CPU reference
vf-run-again = Run again
vf-failed = Run failed: { $error }
vf-passed = ✔ Passed: all { $total } checks within tolerance ({ $label })
vf-failed-checks = ✖ Failed: { $failed } of { $total } checks exceed the tolerance
vf-worst = worst: { $name }{ $rank } max abs error { $abs }, max relative error { $rel }
vf-tolerance = tolerance: relative { $tol } — { $reason }
vf-tolerance-plain = tolerance: a relative difference of { $tol }, what { $dtype } rounding can add up to on this layer. The split only changes the order in which sums are added, so a right split differs from the reference by rounding alone; a wrong one by far more.
vf-tolerance-how = How the tolerance is set
vf-tp1 = TP=1: no all-reduce to show; the output check above compares the whole run.
vf-all-reduce = all-reduce
vf-collective-label = layer { $layer }, { $pass }: { $op }
vf-check-output = the layer's output
vf-check-grad-input = the input gradient
vf-check-rank-count = the number of GPUs
vf-check-grad = the gradient of { $param } (layer { $layer })
vf-check-op = the output of { $op } (layer { $layer })
vf-before = Before: each GPU's partial output [{ $rows }, { $cols }] (blue negative, orange positive; one scale)
vf-before-backward = Before: each GPU's part of the input gradient [{ $rows }, { $cols }] (blue negative, orange positive; one scale)
vf-more-gpus = … { $count } more GPUs
vf-after = After: the all-reduced sum
vf-reference = CPU reference
vf-error = |after - reference|: max abs { $abs }, max rel { $rel }
vf-scale-caption = Absolute error, log scale: white is a millionth of what the tolerance allows, darkest is the tolerance.
vf-scale-tol = tolerance
vf-a11y-heatmap = Error heatmap: each cell's absolute error against the reference, from white (a millionth of the tolerance) to the darkest colour (the tolerance)
vf-a11y-scale = Error colour scale, from a millionth of the tolerance to the tolerance
vf-stage-weights = random weights
vf-stage-reference = CPU reference
vf-stage-sharded = sharded run
vf-stage-verify = comparing

## Precision.
pr-title = Precision: the same block in four dtypes and at every TP
pr-intro = Forward pass of { $label }, in f64, f32, bf16 and f16 (bf16 and f16 emulated: f32 arithmetic, rounded at every op boundary and in the all-reduce) at TP { $tps }. Each result is compared with the unsharded f64 reference, and with TP=1 in the same dtype: the effect of summation order alone.
pr-running = running { $count } forward passes ({ $seconds } s)
pr-run = Run the sweep
pr-run-again = Run again
pr-stale = (the scenario changed since this run)
pr-failed = Sweep failed: { $error }
pr-reference = Reference: max|y| = { $max }, RMS { $rms }; longest reduction K = { $k }. ULPs are counted at max(|value|, RMS) so that values near zero do not inflate them.
pr-col-dtype = dtype
pr-col-tp = TP
pr-col-rel = max rel error vs f64
pr-col-eps = in ε
pr-col-rms = RMS error
pr-col-differs = differs from TP=1
pr-col-ulps = median / max ULPs vs TP=1
pr-differs = { $percent }% of { $elements }
pr-baseline = (baseline)
pr-histogram-of = Error against f64, in ULPs of
pr-axis-share = % of outputs
pr-axis-ulps = |error| in ULPs at max(|reference|, RMS)
pr-findings-title = What the numbers say
pr-f-bounds = bounds √K·ε / K·ε
pr-f-spread = max rel error vs f64, over the TP sizes
pr-f-vs-tp1 = largest TP vs TP=1 difference
pr-f-eps = { $eps } ε·max|ref|
pr-f-verdict = verdict
pr-f-ok = every TP within K·ε
pr-f-over = above K·ε: look for a bug
pr-findings = In every dtype all TP sizes are about equally far from f64, and the differences between TP sizes are of the size of the rounding itself (K = { $k }): the split changes only the order of the additions.
pr-why-title = Why TP=1 and TP=2 differ, and why that is not a bug
pr-why = -

## Train.
tr-title = Train: the same model at TP 1, 2 and 4
tr-intro = A character-level GPT ({ $layers } layers, hidden { $hidden }, { $heads } heads) learns to continue the guide ({ $chars } characters). Each TP size trains its own shards from the same seed on the same batches; the split only reorders additions, so the curves should lie on top of each other.
tr-steps = steps
tr-lr = learning rate
tr-gqa = grouped-query attention (2 KV heads)
tr-gqa-hint = The 4 query heads share 2 KV heads. TP=2 gives each GPU one KV head; TP=4 replicates each KV head on 2 GPUs, which all-reduce the copies' gradients so that the copies stay identical.
tr-stop = Stop
tr-start = Start training
tr-progress = step { $done }/{ $steps }
tr-failed = Training failed: { $error }
tr-err-no-steps = steps must be at least 1 (got 0)
tr-err-too-many-steps = steps { $steps } is over the limit of { $max }; use fewer steps
tr-err-lr = the learning rate must be a positive number (got { $lr }); try 3e-3 for Adam, 0.1 for SGD
tr-err-text-short = the text has { $chars } characters, too few for windows of seq { $seq } + 1; reduce seq
tr-err-diverged = training diverged at step { $step } of { $steps } at TP={ $tp }: the loss is { $loss }; lower the learning rate (now { $lr }) and try again
tr-finished = Finished: the loss went from { $first } to { $last }; largest gap to TP=1 over the run: TP=2 { $gap2 }, TP=4 { $gap4 } (relative)
tr-axis-step = step
tr-axis-loss = cross-entropy (nats per character)
tr-coincide = The three curves coincide: TP changes where the numbers are computed, not what is computed. TP=2 is dashed and TP=4 dotted over TP=1.
tr-lr-range = From 0.00001 to 1 (a larger value is set to 1); the default, 0.003, trains this model steadily with Adam.
tr-rose = The curves do not coincide here: the loss rose from { $first } to { $last }, because the learning rate { $lr } is too high for this model, and as the numbers grew, the TP sizes' tiny rounding differences grew with them (largest gap to TP=1: { $gap }). With a learning rate that trains (the default is 0.003) they coincide.
tr-apart = The curves drift apart here by up to { $gap } of the loss: the TP sizes add their partial sums in another order, and in this run the rounding differences grew over the steps. In f64 they stay far below what the eye can see.

## Vocabulary.
vo-title = Vocabulary parallelism: the embedding and the loss split by vocabulary
vo-vocab = vocabulary
vo-pad = pad to a multiple of
vo-intro = V = { $vocab } padded to { $padded } ({ $padding } padding rows), { $rows } rows on each of { $tp } GPUs; hidden { $hidden } and { $tokens } tokens from the scenario. The output layer is tied to the embedding.
vo-ce = Cross-entropy without the full logits: each GPU sends { $ce } (all-reduces of the row max, the sum of exp and the target logit, { $tokens } numbers each); gathering the [{ $tokens }, { $padded }] logits would send { $gather } per GPU, { $ratio }× more.
vo-col-pass = pass
vo-col-event = event
vo-col-what = what
vo-col-shape = shape per GPU
vo-col-sends = each GPU sends
vo-compute = compute
vo-checking = checking ({ $seconds } s)
vo-check = Check against the reference
vo-check-failed = Check failed: { $error }
vo-passed = ✔ Passed
vo-failed = ✖ Failed
vo-result = { $verdict }: loss { $loss } vs reference { $reference } (V={ $vocab }, TP={ $tp }, { $dtype }); { $checks } checks, worst relative error { $worst }, tolerance { $tolerance }; padding rows' gradients are zero
vo-split-a11y = vocabulary split: { $rows } rows per GPU, { $padding } padding rows at the end
vo-rank-rows = GPU { $rank }: rows { $first }–{ $last }
vo-err-too-large = the embedding table would hold { $elements } elements ({ $padded } padded rows × hidden { $hidden }), over the { $limit } this CPU demo allocates; reduce vocab or hidden
vo-err-padding = vocab { $vocab } padded to a multiple of granularity { $granularity } × TP { $tp } does not fit in 64 bits; use a granularity of at most { $max }
vo-err-memory = this vocabulary run needs about { $needed } ({ $tokens } tokens × { $padded } padded rows of logits, the table and their gradients), over the { $limit } guard; reduce tokens, vocab or hidden

## GPU.
gpu-title = GPU: the same shards on real hardware
gpu-cuda-compiled = CUDA support compiled in: { $answer }
gpu-col-library = library
gpu-col-state = state
gpu-col-version = version
gpu-col-needed = needed for
gpu-found = found
gpu-missing = missing
gpu-without = Everything else in tplab works without a GPU: the simulator runs the same shards on virtual GPUs on the CPU.
gpu-look-again = Look again
gpu-scenario = Scenario: { $label }
gpu-scenario-words = hidden { $hidden }, { $heads } heads{ $kv }, FFN { $ffn }, sequence { $seq }, batch { $batch }, layers { $layers }, TP={ $tp }{ $sp }, { $dtype }
gpu-scenario-kv = { " " }({ $kv } KV heads)
gpu-scenario-sp = , sequence parallel
gpu-iterations = iterations{ " " }
gpu-run = Run on the GPU
gpu-run-disabled = needs a usable GPU, a valid scenario and no run in progress
gpu-split = Split:
gpu-split-megatron = Megatron-LM's (fused kernels)
gpu-split-lab = your plan from the design lab
gpu-split-lab-none = Open the Design view and choose a split first; it can then run here.
gpu-split-lab-is = Your plan on { $tp } GPUs: { $splits } (the design lab's scenario, each op as its own kernels)
gpu-failed = The GPU run failed: { $error }
gpu-on = { $label } on { $devices }
gpu-iteration = Forward + backward: { $ms } ms (median iteration).
gpu-against = Against the CPU reference: { $result }
gpu-measured = Measured on the GPU (CUDA events)
gpu-predicted = Predicted
gpu-per-op = Per op (ms, summed over layers, mean over ranks); ratio = measured share / predicted share:
gpu-col-measured = measured ms
gpu-col-predicted = predicted ms
gpu-col-ratio = ratio
gpu-lib-driver = CUDA driver
gpu-need-driver = everything on the GPU
gpu-need-nvrtc = compiling tplab's kernels at run time
gpu-need-cublas = the matrix products
gpu-need-nccl = all-reduce across two or more GPUs
gpu-get-driver = install the NVIDIA driver (it provides libcuda.so.1); in a container, run with the GPU exposed (e.g. `docker run --gpus all`)
gpu-get-nvrtc = install the CUDA toolkit's NVRTC (libnvrtc.so.13) or `pip install nvidia-cuda-nvrtc` and add its nvidia/cu13/lib directory to LD_LIBRARY_PATH
gpu-get-cublas = install the CUDA toolkit's cuBLAS (libcublas.so.13) or `pip install nvidia-cublas` and add its lib directory to LD_LIBRARY_PATH
gpu-get-nccl = install NCCL (`apt install libnccl2` or `pip install nvidia-nccl-cu13`); only needed for runs over two or more GPUs
gpu-advice-not-found = not found on the loader path (LD_LIBRARY_PATH and the system's directories); { $how }
gpu-advice-versioned = found only as { $found } but cudarc looks for { $looked }: make a symlink named { $symlink } next to it (in a directory on LD_LIBRARY_PATH) or set LD_LIBRARY_PATH so the loader finds one of those names
gpu-advice-lacks = { $file } loads but lacks { $symbol }: it is not a complete { $library } library, or older than CUDA 13.0, which tplab's cudarc build expects
gpu-advice-fails = the library loads but does not work: { $error }; it may be older than CUDA 13.0, which tplab's cudarc build expects
gpu-lib-advice = { $library } (looked for { $looked }): { $advice }
gpu-lib-fix = { $library }: { $fix }
gpu-details = Details: the files looked for
gpu-problem-not-compiled = tplab was built without CUDA support (the `cuda` feature of tplab-kernels is off); rebuild with default features: `cargo build --release`
gpu-problem-missing = { $library } ({ $file }) is missing
gpu-problem-broken = { $library } is broken: { $file } loads but lacks { $symbol }
gpu-problem-failing = { $library } loads but does not work: { $error }
gpu-problem-unlisted = the driver loads but devices cannot be listed: { $error }
gpu-problem-no-device = no CUDA device is visible (check `nvidia-smi` and CUDA_VISIBLE_DEVICES)
gpu-ready = ready: { $count } device(s): { $names }
gpu-unavailable = unavailable: { $problem }
gpu-unavailable-missing = unavailable: { $missing } missing on this machine, so Run stays off; each line above says how to get one.
gpu-unknown-reason = unknown reason
gpu-device = GPU { $ordinal }: { $name } — compute capability { $cc }, { $total } GiB total, { $free } GiB free
gpu-stage-compile = compiling kernels and uploading shards
gpu-stage-warm-up = warm-up done
gpu-stage-timed = timed iteration
gpu-stage-done = done
gpu-stage-reference = computing the CPU reference
gpu-mode-streams = { $devices } — single device (GPU 0), { $ranks } ranks as CUDA streams
gpu-tol-16bit = { $dtype }: rounding to 8 mantissa bits at ~12 op boundaries (2^-9 each, adding like a random walk) with f32 accumulation, amplified by LayerNorm and softmax backward, ×√layers
pg-controls = Scenario: sizes, TP, dtype, algorithm
st-identity = identity
presenter-view = view

## Collectives and Planner (helper A's views: their headings and controls).
cl-title = Collectives: how an all-reduce moves the data
cl-algorithm = algorithm{ " " }
cl-gpus = GPUs
cl-follow = Follow scenario TP
cl-previous = Previous round
cl-next = Next round
cl-round = round
cl-done = done: every GPU holds the full sum
cl-round-line = Round { $k } of { $rounds } · { $phase } · the arrows are this round's messages on their way; each cell shows what a GPU holds before they arrive (digits side by side: a partial sum of those GPUs' data)
cl-round-before = Before round 1 · the arrows are round 1's messages, about to leave; every GPU holds only its own data (its digit in each chunk)
cl-round-line-after = Round { $k } of { $rounds } · { $phase } · the arrows are this round's messages; the cells as they are after them (digits side by side: a partial sum of those GPUs' data)
pl-title = Planner: 3D layouts for a model on a cluster
vf-bound = { $dtype } ε={ $eps } × √K (K={ $k }, longest reduction: hidden, ffn, or the tokens a gradient sums over; rounding errors add like a random walk) × depth (layers+1)={ $depth } × 16 (two executors × λ=4 × Σ|ab|/|Σab|) × max(1, κ)={ $kappa } (LayerNorm conditioning κ = max rms(x)/σ(x), large only when a row's features are nearly equal, as at tiny hidden sizes): the split reorders every row-parallel sum, so results differ by rounding only

## Design: the learner shards the block.
view-design = Design
design-title = Design: split the layer yourself
design-free = Free design
design-challenge = Challenge
design-free-intro = Click a matrix to choose how it is split: whole on every GPU, its columns, or its rows. The rules place the collectives your split needs, run it on virtual GPUs against the unsharded reference, and price it beside Megatron-LM's split.
design-click = Click a matrix (a box with a square) to choose how it is split: whole on every GPU, its columns, or its rows; then press "Check my plan".
design-click-plus = A "+" between two ops places a collective there (here the collectives are placed by hand and the splits are fixed); click a placed one to remove it; then press "Check my plan".
design-walk = Step through my plan
design-walk-hint = Opens the walkthrough on this plan: every op and collective of its forward and backward pass, GPU by GPU.
design-walk-refused = This plan is refused: only a program every op can read can be stepped through. Fix it first.
design-gpus = GPUs:
design-tp = TP={ $n }
design-solved-count = { $solved } of { $total } challenges solved
design-hint = Show a hint
design-hint-cost = The third star is for solving without the hint.
design-hint-text = Hint: { $hint }
design-check = Check my plan
design-restart = Start again
design-next = Next challenge
design-stars-rule = One star for solving, one for the cheapest plan, one for solving at the first check without the hint.
design-stars-short = ☆ one for each: solving · the cheapest plan · the first check, no hint
design-missed-cheaper = Not the cheapest plan: another split that solves it sends fewer bytes per GPU (the second star).
design-missed-hint = The hint was shown (the third star is for solving without it).
design-missed-earlier-check = An earlier check of this challenge did not pass (the third star is for the first check).
design-solved = Solved { $stars }
design-why = Why: { $why }
design-saved = Saved with { $name }'s quiz progress.
design-not-yet = Not yet:
design-name = Your name, to keep your stars with your quiz progress:
design-block = Your layer
design-click-matrix = Click a matrix to change its split: whole, then its columns, then its rows. Collectives appear where the split needs them; hover over one for why.
design-nothing-here = nothing placed here
design-slice = take its slice (free)
design-slice-why = Each GPU keeps its part of a tensor it holds whole: no communication.
design-collective-why = { $tensor } goes from { $from } to { $to }
design-click-remove = Click to remove it.
design-unplaced = { $kind } (nothing to do here)
design-add-here = Place a collective after { $op }
design-sp = Sequence parallelism (split the residual stream by tokens)
design-sp-short = Sequence parallelism
design-by-hand = Place the collectives myself
design-by-hand-hint = Starts from what the rules placed; remove one, or add one with + after an op.
design-fixes = Fix:
design-fixes-held = Try it yourself first: a "+" between two ops places a collective there. The fixes come with the hint.
design-fixes-show = Show the hint and the fixes
design-run-anyway = Run it anyway and see how wrong it is
design-cycle = Click to change the split: whole, then its columns, then its rows
design-fixed-weight = This challenge keeps this matrix as it is.
design-costs = What it costs, and whether it is right
design-equal = ✔ Equal to the unsharded reference (largest relative error { $error }, tolerance { $tol })
design-equal-goal-open = Equal to the unsharded reference (largest relative error { $error }, tolerance { $tol }): the numbers are right. Press "Check my plan" to see whether the split meets the challenge's goal.
design-equal-goal-missed = Equal to the unsharded reference (largest relative error { $error }, tolerance { $tol }): the numbers are right, but the split does not meet the challenge's goal yet (the check says what is missing).
design-differs = ✖ Differs from the reference: largest relative error { $error } (tolerance { $tol })
design-refused = ✖ Refused: an op reads a tensor held in a way it cannot use (see the rule on the left)
design-refused-above = ✖ Refused: an op reads a tensor held in a way it cannot use (see the rule above)
design-tensors = { $passed } of { $total } outputs and gradients equal the reference
design-none = none
design-forward = Forward collectives
design-backward = Backward collectives
design-bytes = Each GPU sends per layer
design-vs-megatron = ({ $x }× what Megatron's split of the whole layer sends)
design-vs-megatron-refused = (as placed: a refused plan breaks a rule, so its bytes do not compare with Megatron's split)
design-weights = Weights per GPU
design-of-whole = { $have } of { $whole }
design-activations = Activations kept per GPU
design-layer = Checked on a layer with hidden size { $hidden }, { $heads } query heads, { $kv } KV heads, { $tokens } tokens, on { $tp } GPUs, in { $bits }-bit floating point ({ $bytes } bytes a number: the byte counts here use them); a small layer of its own, not the scenario of the other views.
design-lanes = What each GPU holds after each op
design-lanes-key = solid: a whole copy · vertical bars: its columns · horizontal bars: its tokens · pale with Σ: a partial sum · a diamond before a letter: the tensor after a collective · red, outlined: a GPU uses it as something it is not (the rule the plan breaks)
design-holds = GPU { $gpu } holds { $what } of { $tensor }
design-misread = It is read as something it is not: nothing placed before this op makes it what the op needs (the run goes on as if it did).
design-op-ln1 = LayerNorm 1
design-op-ln2 = LayerNorm 2
design-op-attention = attention
design-op-bias = + bias
design-op-bias-once = + bias (once, on GPU 0)
design-op-residual = + residual
design-op-residual-out = + residual = output
design-w-qkv = QKV projection
design-w-out = output projection
design-w-fc1 = fc1
design-w-fc2 = fc2
design-split-whole = whole
design-split-columns = its columns
design-split-rows = its rows
design-place-whole = the whole tensor
design-place-tokens = its tokens
design-place-columns = its columns
design-place-partial = a partial sum
design-rule-gelu-partial = GeLU on GPU { $gpu } reads a partial sum of { $tensor }: GeLU(a)+GeLU(b) ≠ GeLU(a+b), so GeLU needs the whole sum.
design-rule-attention-partial = Attention on GPU { $gpu } reads a partial sum of { $tensor }: softmax is not linear, so attention needs the whole sum.
design-rule-attention-tokens = Attention on GPU { $gpu } reads only its tokens of { $tensor }: each token attends to every earlier token of its sequence, so attention needs all tokens of its heads.
design-rule-norm-partial = LayerNorm on GPU { $gpu } reads a partial sum of { $tensor }: the mean and variance of a sum are not the sums of the means and variances.
design-rule-norm-columns = LayerNorm on GPU { $gpu } reads only its columns of { $tensor }: each token's mean and variance run over all its features, so LayerNorm needs whole rows.
design-rule-columns-need-whole = The { $weight } on GPU { $gpu } reads { $holds } of { $tensor }, but it is split by columns: each GPU multiplies the whole input by its columns.
design-rule-rows-need-columns = The { $weight } on GPU { $gpu } reads { $holds } of { $tensor }, but it is split by rows: each GPU multiplies its columns of the input by its rows, so it needs exactly those columns.
design-rule-whole-needs-rows = The { $weight } on GPU { $gpu } reads only its columns of { $tensor }, but it is whole: a whole weight multiplies whole rows of its input.
design-rule-residual-partial = The residual add on GPU { $gpu } reads a partial sum of { $tensor } while the residual stream is { $stream }: adding each GPU's partial sum to its own copy of the stream is not the sum. Sum { $tensor } first.
design-rule-residual-mismatch = The residual add on GPU { $gpu } reads { $holds } of { $tensor } while the residual stream is { $stream }: both sides must be held alike.
design-rule-nothing-to-do = The { $kind } after { $op } has nothing to do: every GPU holds { $holds } of { $tensor }.
design-rule-other = An op on GPU { $gpu } cannot read { $holds } of { $tensor }.
design-fix-collective = { $kind } after { $op } ({ $bytes } per GPU), so it reads { $to }
design-fix-split = { $weight }: { $split } instead
design-fix-remove = remove the { $kind } after { $op }
design-miss-refused = the rules refuse the program (see the rule under your layer)
design-miss-differs = its numbers differ from the reference
design-miss-count = all-reduces in its forward pass: { $ar } (the goal: { $goalar }); other collectives: { $others } (the goal: { $goalothers })
design-miss-cheap = it sends { $have } times the best split's bytes; the goal is at least { $want } times
design-miss-by-hand = place the collectives yourself (tick “Place the collectives myself”)
design-miss-elsewhere = the program is refused, but not where the goal asks
design-miss-not-refused = the program is valid: nothing reads a partial sum yet
design-miss-run-anyway = Now tick "Run it anyway" and see how far the numbers are from the reference.
design-miss-sp = turn sequence parallelism on
design-miss-still-ar = all-reduces still in its forward pass: { $n }
design-miss-whole = split every weight: a whole weight on every GPU is not tensor parallelism
design-ch-mlp-one-all-reduce-title = The MLP on 2 GPUs with one all-reduce
design-ch-mlp-one-all-reduce-goal = Split fc1 and fc2 so that the MLP's forward pass needs a single all-reduce.
design-ch-mlp-one-all-reduce-hint = GeLU works value by value: if each GPU holds whole values of some columns of A, it needs nothing from the others.
design-ch-mlp-one-all-reduce-why = fc1 by columns gives each GPU whole columns of A, so GeLU runs locally; fc2 by rows then multiplies exactly those columns and leaves partial sums, summed once. Any other split sums the 4h-wide A or gathers a whole tensor.
design-ch-attention-one-all-reduce-title = Attention on 4 GPUs with one all-reduce
design-ch-attention-one-all-reduce-goal = Split the QKV and output projections so that attention's forward pass needs a single all-reduce.
design-ch-attention-one-all-reduce-hint = Heads never look at each other: a GPU that holds a head's Q, K and V can run that head alone.
design-ch-attention-one-all-reduce-why = QKV by columns gives each GPU whole heads, and attention runs per head; the output projection by rows multiplies each GPU's heads' context by the matching rows and leaves partial sums, summed once.
design-ch-layer-two-all-reduces-title = A whole layer with two forward all-reduces
design-ch-layer-two-all-reduces-goal = Split all four weights so that the layer's forward pass needs exactly two all-reduces.
design-ch-layer-two-all-reduces-hint = Do for attention what you did for the MLP: a column split first, a row split second.
design-ch-layer-two-all-reduces-why = This is Megatron-LM's split: each half is a column-parallel layer, a local op and a row-parallel layer, so each half sums its partial results once, with an all-reduce after its row-parallel layer (Megatron names it g). In the backward the sums move to the inputs: an all-reduce of each half's input gradient before its column-parallel layer (named f), two more.
design-ch-mlp-correct-but-costly-title = Correct, but four times the traffic
design-ch-mlp-correct-but-costly-goal = Find an MLP split that still equals the reference but makes each GPU send at least 3 times the bytes of the best MLP split.
design-ch-mlp-correct-but-costly-hint = Try the row split first and the column split second.
design-ch-mlp-correct-but-costly-why = fc1 by rows leaves partial sums of the 4h-wide A, and GeLU needs whole values: the sum now moves a tensor four times wider, and fc2 by columns leaves slices that the residual add must gather. Same numbers, about 4.5 times the bytes: choosing the split dimensions is the whole trick.
design-ch-gelu-of-a-partial-sum-title = Make GeLU read a partial sum
design-ch-gelu-of-a-partial-sum-goal = Place the collectives yourself and split fc1 so that GeLU is handed a partial sum; then run it anyway and see what breaks.
design-ch-gelu-of-a-partial-sum-hint = Split fc1 by rows and place no collective between fc1 and GeLU.
design-ch-gelu-of-a-partial-sum-why = GeLU(a)+GeLU(b) ≠ GeLU(a+b): a non-linear function of a partial sum is not a partial sum of anything. The engine refuses the program; run anyway, its outputs are far from the reference.
design-ch-sequence-parallel-no-all-reduce-title = Sequence parallelism: no all-reduce at all
design-ch-sequence-parallel-no-all-reduce-goal = With sequence parallelism on, split the layer so that its forward pass has no all-reduce.
design-ch-sequence-parallel-no-all-reduce-hint = An all-reduce is a reduce-scatter followed by an all-gather; keep the residual stream split by tokens between them.
design-ch-sequence-parallel-no-all-reduce-why = With Megatron's split and the residual stream split by tokens, each g becomes a reduce-scatter (each GPU keeps its tokens of the sum) and each f an all-gather: the same bytes as the two all-reduces, and LayerNorm, bias and residual run on a quarter of the tokens.
design-ch-gqa-more-gpus-than-kv-heads-title = Grouped-query attention on more GPUs than KV heads
design-ch-gqa-more-gpus-than-kv-heads-goal = 8 query heads share 2 KV heads; split the layer over 4 GPUs with two forward all-reduces.
design-ch-gqa-more-gpus-than-kv-heads-hint = Megatron's split still works: a GPU that has a query head needs a copy of its KV head.
design-ch-gqa-more-gpus-than-kv-heads-why = Each GPU holds 2 query heads and a copy of the KV head they read (vLLM's rule), so attention stays local; the copies' K and V gradients cover only their own query heads, so each pair of copies sums them in the backward.
design-ch-repair-missing-g-title = Repair a broken program
design-ch-repair-missing-g-goal = This hand-placed program forgot a collective. Add what is missing so that it equals the reference.
design-ch-repair-missing-g-hint = Follow fc2's output: what does each GPU hold when the residual add reads it?
design-ch-repair-missing-g-why = fc2 by rows leaves a partial sum on each GPU, and adding a partial sum to every GPU's copy of the residual stream counts the stream once per GPU: the sum (g, an all-reduce) must come first.

## The walkthrough's predictions.
walk-predict-toggle = Predict first
walk-predict-toggle-hint = Before each collective of the first layer, and at the first backward step, say what will happen; the step plays after your answer.
walk-predict-again = Ask the predictions again
walk-predict-again-hint = Forget this walk's answers and go back to the first step: every prediction is asked again (for a class after a rehearsal).
walk-predict-holds = Predict: after this { $kind }, what will GPU { $gpu } hold of { $tensor }?
walk-predict-bytes = Predict: how many bytes will each of the { $n } GPUs send in this { $kind }, run as a ring?
walk-predict-which = Predict: going backward through this layer, which of these makes the GPUs communicate?
walk-predict-own-partial = only its own partial sum, unchanged
walk-predict-its-tokens = the sum, but only its own tokens (rows)
walk-predict-whole-sum = the whole sum, the same on every GPU
walk-predict-joined = the whole tensor, joined from every GPU's slice
walk-predict-reveal = Reveal the answer (right arrow key)
walk-predict-skip = Skip for now (asked again at the end of the layer)
walk-predict-wait = The step plays once you answer or skip.
walk-predict-wait-presenter = The room answers aloud (or by a show of hands); the right arrow key shows the answer as the step starts to play, one press a round.
walk-predict-right = ✔ Right: { $answer }
walk-predict-wrong = ✖ Not quite: the answer is { $answer }. { $lesson }
walk-predict-answer = The answer: { $answer }
walk-predict-tally = You predicted { $right } of { $total } right.
walk-predict-lesson-fg = Lesson 6 (the f and g operators) explains what each collective leaves on each GPU.
walk-predict-lesson-ring = Lesson 7 (how an all-reduce works) counts the bytes each GPU sends.

# --- Words, not code (issue 22, item 6) ---
preset-gpt2-small = GPT-2 small
preset-tiny = tiny layer
alg-ring = ring
alg-recursive-halving-doubling = recursive halving and doubling
alg-tree = tree
alg-direct = direct
phase-reduce-scatter = reduce-scatter
phase-all-gather = all-gather
phase-reduce = reduce to one GPU
phase-broadcast = broadcast from it
phase-fold-in = fold-in
phase-fold-out = fold-out
phase-direct = direct exchange
cl-chunks-a11y = Chunks after round { $k }: { $held }
cl-round-a11y = Round { $k } of { $rounds }. Sent this round: { $sends }. What each GPU holds before it: { $held }
st-lanes-moving = { $tp } GPUs exchanging data: { $op }
st-lanes-running = { $tp } GPUs running: { $op }
sm-layers = { $n } layers
sm-kv = { $n } KV heads
sm-sp = sequence parallel
sm-algorithm = { $algorithm } all-reduce
sm-gpus = { $n } GPUs
sm-per-node = { $n } per node
sm-event = { $pass } at "{ $op }"
pr-layer = a layer with hidden size { $hidden }, { $heads } heads, FFN width { $ffn } and { $tokens } tokens
pg-heads-why = Why: { $heads } heads over { $tp } GPUs is { $each } whole head(s) each with { $over } left over (marked ?): every GPU must hold the same whole number of heads, because a head's Q, K and V columns cannot be cut.
pg-heads-a11y = { $heads } heads coloured by GPU: { $each } per GPU, { $over } left over
pg-heads-fix = Use { $heads } heads of size { $size } (splits over { $tp } GPUs: one node)
st-strip-bias-residual = bias + residual
st-ring-caption = { $algorithm }: round { $k }/{ $rounds } ({ $phase })
st-gpu-box = { $op }, output [{ $rows }, { $cols }]
beside-label = side by side
beside-nothing = none
beside-tp = TP = { $tp }
beside-megatron = Megatron's split
beside-megatron-on = Megatron's split on { $tp } GPUs
beside-this = This scenario: TP = { $tp }
beside-your-plan = Your plan on { $tp } GPUs
beside-no-step = Nothing like this step here: still at its step { $k }.
beside-sent = By the end of this step each GPU has sent { $bytes }.
beside-holds = Each GPU holds { $share } of every weight matrix and sends { $bytes } per layer, forward and backward.
beside-holds-one = One GPU holds every matrix whole and sends nothing.
beside-error = Cannot be drawn: { $error }

## Why a prediction's answer is right (computed from the step).
walk-why-all-reduce = An all-reduce adds up the { $n } GPUs' partial sums and hands the whole sum to every GPU: GPU { $gpu } now holds all of { $tensor }, each number the sum of { $n } terms.
walk-why-reduce-scatter = A reduce-scatter adds up the { $n } partial sums but keeps only a slice on each GPU: GPU { $gpu } holds its 1/{ $n } of the tokens of { $tensor }, summed.
walk-why-all-gather = An all-gather joins the { $n } GPUs' slices: GPU { $gpu } now holds the whole of { $tensor }, put together from { $n } slices.
walk-why-which = Going backward it is f, not g: f was the identity going forward, so its backward is an all-reduce. Every GPU's slice of the next matrix gives a partial gradient of the same whole input, and those must be added. g's backward is the identity: the gradient of a whole copy is already whole on every GPU. Here that is { $op }.
walk-why-bytes-ring = In a ring every GPU sends { $factor }×({ $n1 }/{ $n }) of the payload: { $factor } × { $n1 }/{ $n } × { $payload } = { $sent }. Half of it while the partial sums are added up (reduce-scatter), half while the sums are handed round (all-gather).
walk-why-bytes-half = Each GPU sends { $n1 }/{ $n } of the payload: { $n1 }/{ $n } × { $payload } = { $sent }: every chunk but its own, once.
walk-why-bytes-other = Each GPU sends { $sent } of the { $payload } payload with this algorithm's schedule ({ $n } GPUs).
walk-predict-nudge = Answer the question or skip it first: stepping on (the arrow key or Next step) does not answer for you.
walk-skipped-back = You skipped { $count } question(s) in this layer.
walk-end = The end of the walk: every op and collective of the forward and the backward pass has played. Home (or Restart) goes back to the first step; "beside it" plays another TP next to this one.
walk-skipped-ask = Ask them now
walk-round-caption = Round { $k } of { $rounds }: { $phase }, the cells as they are after its messages
walk-round-key = A row per GPU, a box per chunk: the digits say whose numbers a chunk holds so far (Σ: all of them); an arrow is a chunk sent this round.
walk-round-none = The identity: nothing moves between GPUs in this step.
design-copy-file = Copy my plan
design-copy-file-hint = Copies the plan as a plan file: paste it into PLAN.toml and run tplab design --file PLAN.toml, or paste it back here.
design-copy-flags = Copy as a tplab command
design-copy-flags-manual = Hand-placed collectives need the plan file: use "Copy my plan".
design-paste = Paste a plan:
design-paste-hint = a plan copied with "Copy my plan" or "Copy as a tplab command"
design-paste-use = Use this plan
design-stars-spoken = { $n } of 3 stars
design-copy-flags-hint = Copies the plan as a tplab design command line, to run in a terminal.

# Tensors in words (widgets/words.rs): what each letter means, and which part a GPU holds.
tensor-x = the layer's input
tensor-h1 = LayerNorm 1's output
tensor-qkv = the queries, keys and values
tensor-ctx = attention's output, the heads side by side
tensor-z = the output projection's output, before the residual add
tensor-x1 = the residual stream after attention
tensor-h2 = LayerNorm 2's output
tensor-a = fc1's output, before GeLU
tensor-u = GeLU's output
tensor-m = the MLP's output, before the residual add
tensor-y = the layer's output
tensor-grad = the gradient of { $of }
tensor-kv-grad = the gradient of the QKV weight's K and V columns
tensor-ln1-weight = LayerNorm 1's scale
tensor-ln1-bias = LayerNorm 1's shift
tensor-qkv-weight = the weight that makes the queries, keys and values
tensor-qkv-bias = the queries', keys' and values' bias
tensor-out-weight = the output projection's weight
tensor-out-bias = the output projection's bias
tensor-ln2-weight = LayerNorm 2's scale
tensor-ln2-bias = LayerNorm 2's shift
tensor-fc1-weight = fc1's weight
tensor-fc1-bias = fc1's bias
tensor-fc2-weight = fc2's weight
tensor-fc2-bias = fc2's bias
slice-heads-qkv = { $count ->
    [one] head { $range } of Q, K and V
   *[other] heads { $range } of Q, K and V
}
slice-heads-gqa = query heads { $range }, KV heads { $kv }
slice-heads = { $count ->
    [one] head { $range }
   *[other] heads { $range }
}
slice-head-rows = { $count ->
    [one] the rows of head { $range }
   *[other] the rows of heads { $range }
}
slice-tokens = { $count ->
    [one] token { $range }
   *[other] tokens { $range }
}
slice-rows = { $count ->
    [one] row { $range }
   *[other] rows { $range }
}
slice-columns = { $count ->
    [one] column { $range }
   *[other] columns { $range }
}
lanes-key = The letters: { $legend }
design-lanes-column = After { $op }: { $tensor }, { $meaning }
design-holds-after = After { $op }: GPU { $gpu } holds { $what } of { $tensor }
# The walkthrough strip's short op names.
st-strip-op-ln1 = LN 1
st-strip-op-qkv = QKV
st-strip-op-core = attention
st-strip-op-out = out proj.
st-strip-op-ln2 = LN 2
st-strip-op-fc1 = fc1
st-strip-op-gelu = GeLU
st-strip-op-fc2 = fc2
st-strip-op-bias = bias
st-strip-op-grads = gradients
cl-round-a11y-after = Round { $k } of { $rounds }. Sent this round: { $sends }. What each GPU holds after it: { $held }
design-op-misread = read as it is not
walk-whynot-own-partial = Unchanged would mean nothing moved: the { $kind } is there to change what each GPU holds.
walk-whynot-its-tokens = Its own tokens of the sum (1/{ $n } of it) is what a reduce-scatter leaves; this { $kind } leaves something else.
walk-whynot-whole-sum = The whole sum on every GPU is what an all-reduce leaves; this { $kind } leaves something else.
walk-whynot-joined = Joining the GPUs' slices side by side is an all-gather's work; partial sums of one tensor are added, not joined.
tr-table = The curves as numbers (the loss at each step, per TP)
walk-predict-now = What each GPU holds now
walk-predict-size = { $tensor } is { $shape } in { $dtype }: GPU 0 holds { $bytes } of it.
layout-recompute-selective = selective recomputation
layout-recompute-full = full recomputation
pl-layout-key = TP, PP, DP: tensor-, pipeline- and data-parallel sizes · b: the micro-batch (sequences a GPU computes at once) · SP: sequence parallelism · ZeRO-1: optimizer states split over DP, ZeRO-2: gradients too · v: interleaving depth (model chunks a GPU holds) · recomputation: activations recomputed in the backward pass instead of kept.
