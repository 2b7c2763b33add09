# capacity strings (en). Keep the ids identical in en/ and tr/.
cap-todays-stack = today's stack
cap-todays-stack-hover = Plan with what Megatron-Core and NeMo run today: FlashAttention, fused kernels, per-GPU GEMM rates, TP/DP/PP overlap, distributed optimizer, uneven pipeline stages. Off: the 2021 Megatron-LM stack the lessons quote.
cap-what-if-title = What each part of today's stack is worth (the winner, one switch flipped)
cap-what-if-switch = switch
cap-what-if-flip = flipped
cap-what-if-change = iteration time
cap-what-if-off = off
cap-what-if-on = on
cap-what-if-no-fit = does not fit in memory
cap-what-if-invalid = not valid for this layout
cap-switch-flash-attention = FlashAttention
cap-switch-fused-kernels = fused kernels
cap-switch-gemm-per-generation = GEMM rate per GPU generation
cap-switch-fp8 = FP8 GEMMs
cap-switch-tp-overlap = TP communication overlap
cap-switch-dp-overlap = DP gradient overlap
cap-switch-distributed-optimizer = distributed optimizer
cap-switch-pp-overlap = pipeline send overlap
cap-switch-interleaving = interleaved 1F1B
cap-nccl-title = As NCCL runs it (nccl-tests: algbw and busbw by message size)
cap-nccl-size = size
cap-nccl-time = time (µs)
cap-nccl-algbw = algbw (GB/s)
cap-nccl-busbw = busbw (GB/s)
cap-nccl-algo = algorithm
cap-nccl-proto = protocol
pl-planning = Planning… { $seconds } s
pl-model = model
pl-gpu = GPU
pl-gpus = GPUs
pl-per-node = per node
pl-between-nodes = between nodes
pl-seq = sequence length
pl-global-batch = global batch
pl-plot-title = Throughput against TP (best layout at each TP)
pl-plot-x = TP size
pl-plot-y = tokens/s
pl-plot-fits = joins each TP's best layout
pl-plot-inside = TP inside a node
pl-plot-spans = TP spans nodes
pl-plot-node = node size
pl-why = Why the winner wins
pl-fit-count = { $fit } layouts fit; { $dropped } set aside (memory or batch rules).
pl-col-layout = layout
pl-col-iteration = iteration (s)
pl-col-compute = compute
pl-col-tp = TP comm
pl-col-bubble = bubble
pl-col-dp = DP comm
pl-col-tokens = tokens/s
pl-col-tflops = TFLOP/s per GPU
pl-col-mfu = MFU
pl-col-memory = memory per GPU
pl-spans-nodes = (TP spans nodes)
cl-side-title = Side by side: all-reduce of one [{ $tokens }, { $hidden }] { $dtype } activation ({ $bytes }) per GPU
cl-col-algorithm = algorithm
cl-col-rounds = rounds
cl-col-messages = messages
cl-col-max-sent = max bytes sent by one GPU
cl-col-busiest = busiest link
cl-col-total = total bytes on links
cl-col-nvlink = modeled: NVLink 4
cl-col-ib = modeled: IB NDR 400
cl-side-note = Ring and recursive halving/doubling send 2(n-1)/n of the buffer per GPU (bandwidth-optimal); tree sends the whole buffer up and down; direct sends it to every other GPU in one round. Modeled times: tplab's α–β cost model per link.
pl-f-beats = { $winner } beats { $other } by { $percent }%: { $reason }.
pl-trade = , though more in { $term } ({ $w } s vs { $o } s)
pl-term-compute = compute
pl-term-tp = TP all-reduces
pl-term-bubble = the pipeline bubble
pl-term-dp = data-parallel communication
pl-term-pp = pipeline sends
pl-term-optimizer = the optimizer step
pl-f-tie = { $winner } and { $other } are within { $percent }% of each other: a tie within the model's accuracy; pick either.
pl-f-nofit = No layout fits in { $usable } usable per GPU; the closest, { $closest }, needs { $needs }: add GPUs (more pipeline or ZeRO sharding), use GPUs with more memory, or recompute activations.
pl-f-noshape = No layout satisfies the shape rules for this model, cluster and batch; see the dropped list.
pl-r-tie = a tie within the model's accuracy; pick either
pl-r-tp-inside = its TP group stays inside one { $intra } node while TP={ $other_tp } spans nodes and all-reduces over { $inter } (TP communication { $w } s vs { $o } s per iteration)
pl-r-tp-less = it spends less time in TP all-reduces ({ $w } s vs { $o } s per iteration; TP={ $wtp } vs { $otp })
pl-r-tp-less-full = it spends less time in TP all-reduces ({ $w } s vs { $o } s per iteration; TP={ $wtp } vs { $otp }, and full recomputation repeats the forward all-reduces)
pl-r-bubble = its pipeline bubble is smaller ((p−1)/m = { $wf } vs { $of }; { $w } s vs { $o } s idle)
pl-r-dp-inside = its data-parallel gradient all-reduce stays inside a node ({ $w } s vs { $o } s exposed)
pl-r-dp-hides = more of its gradient all-reduce hides behind the last micro-batch's backward pass (micro-batch { $wmb } vs { $omb }: { $w } s vs { $o } s exposed)
pl-r-dp-cheaper = its data-parallel gradient all-reduce is cheaper ({ $w } s vs { $o } s exposed; { $wb } vs { $ob } of gradients per GPU over DP={ $wdp } vs { $odp })
pl-r-pp = it sends fewer pipeline activations ({ $w } s vs { $o } s)
pl-r-optimizer = its optimizer step touches fewer parameters per GPU ({ $w } s vs { $o } s)
pl-r-logits = the last pipeline stage also computes the vocabulary logits once per micro-batch, { $wm } times per iteration vs { $om } (compute { $w } s vs { $o } s)
pl-r-recompute = it recomputes less ({ $wr } vs { $or } recomputation: compute { $w } s vs { $o } s)
pl-r-gemm = its GEMMs run closer to peak (compute { $w } s vs { $o } s)
pl-r-gemm-mb = its GEMMs run closer to peak (compute { $w } s vs { $o } s; micro-batch { $wmb } vs { $omb })
pl-shortfall = needs { $needs } per GPU (weights { $weights }, gradients { $gradients }, optimizer { $optimizer }, activations { $activations }) but { $usable } is usable
pl-load-config = Load config.json…
pl-load-config-hover = Plan for any model from its Hugging Face config.json (the small file beside the weights on the model's page).
pl-config-path = path of config.json
pl-config-read = Read
pl-config-drop = or drop the file onto this window
pl-config-summary = { $file }: { $layers } layers, hidden { $hidden }, { $heads } heads ({ $kv_heads } KV), FFN { $ffn }, vocabulary { $vocab }; { $billions } billion parameters
pl-config-summary-moe = { $file }: { $layers } layers, hidden { $hidden }, { $heads } heads ({ $kv_heads } KV), FFN { $ffn }, vocabulary { $vocab }, { $experts } experts ({ $per_token } per token); { $billions } billion parameters
pl-le-zero = { $field } must be at least 1 (got 0)
pl-le-heads = TP={ $tp } does not divide the { $heads } attention heads: each GPU must hold whole heads; valid TP sizes: { $valid }
pl-le-kv-heads = TP={ $tp } does not divide the { $kv_heads } KV heads: Megatron splits KV groups evenly for training (vLLM replicates them when serving); valid TP sizes: { $valid }
pl-le-ffn = TP={ $tp } does not divide the FFN width { $ffn }
pl-le-layers = PP={ $pp } does not divide the { $layers } layers; use a divisor of { $layers }
pl-le-batch = global batch { $global_batch } is not a multiple of micro-batch { $micro_batch } × DP { $dp }; choose them so that it is
pl-le-gpu-count = layout TP={ $tp } × PP={ $pp } × DP={ $dp } = { $needed } GPUs does not match the cluster's { $gpus } GPUs
pl-le-tp-cluster = TP={ $tp } is larger than the cluster's { $gpus } GPUs; choose TP ≤ { $gpus } or a larger cluster
pl-le-zero-stage = ZeRO stage must be 0, 1, 2 or 3 (got { $zero })
pl-le-over-limit = { $field } { $value } is over the limit of { $max }; use a { $field } of at most { $max }
pl-le-tokens = global batch { $global_batch } × seq { $seq } = { $tokens } tokens is outside the range the memory model counts, at most { $max } (2^40) tokens at once; give a smaller batch or sequence
pl-le-virtual = interleaving with { $v } model chunks per GPU needs pipeline stages of at least { $v } layers (PP={ $pp } gives stages of { $min_stage } or more); use fewer virtual stages or a smaller PP
pl-le-cp = context parallelism over { $cp } GPUs needs a sequence length divisible by 2·cp = { $two_cp } (each GPU takes two chunks for causal load balance); got { $seq }
pl-le-kv-serve = TP={ $tp } does not fit the { $kv_heads } KV heads: serving needs either TP to divide the KV heads evenly (whole KV heads on each GPU, Megatron-LM) or the KV heads to divide TP evenly (each KV head copied onto several GPUs, vLLM); valid TP sizes: { $valid }
pl-me-json = config.json is not valid JSON: { $message }
pl-me-not-object = config.json must be a JSON object at the top level
pl-me-missing = config.json has no '{ $key }' key ({ $hint }); add it to the file, or choose a preset model instead
pl-me-bad-value = config.json key '{ $key }' must be { $expected } (got { $got })
pl-me-zero = { $field } must be at least 1 (got 0)
pl-me-over-limit = { $field } { $value } is over the limit of { $max }; no real model comes near it, check the value
pl-me-too-many = this model has { $params } parameters, over the limit of { $limit } (10^15); check layers, hidden, ffn and experts
pl-me-hidden-heads = hidden size { $hidden } is not a multiple of the { $heads } heads; head size must be whole
pl-me-kv-heads = { $heads } query heads cannot be grouped over { $kv_heads } KV heads: the number of query heads must be a multiple of the number of KV heads
pl-me-experts = { $per_token } experts per token must be between 1 and the number of experts ({ $experts })
pl-me-phrase-number-of-transformer-blocks = number of transformer blocks
pl-me-phrase-model-width = model width
pl-me-phrase-attention-heads = attention heads
pl-me-phrase-vocabulary-size = vocabulary size
pl-me-phrase-context-length = context length
pl-me-phrase-query-heads = query heads
pl-me-phrase-mlp-inner-width = MLP inner width
pl-me-phrase-a-non-negative-integer = a non-negative integer
pl-me-phrase-a-positive-integer = a positive integer
pl-me-phrase-a-directory = a directory
pl-me-phrase-a-fifo--named-pipe- = a FIFO (named pipe)
pl-me-phrase-a-socket = a socket
pl-me-phrase-a-device = a device
pl-me-phrase-not-a-regular-file = not a regular file
pl-fe-not-found = { $path }: not found; check the path
pl-fe-not-file = { $path } is { $kind }, not a regular file; give the path of a { $what } file
pl-fe-too-large = { $path } is { $size } bytes, over the { $limit }-byte limit for a { $what } file
pl-fe-not-text = { $path } is not UTF-8 text
pl-fe-io = cannot read { $path }: { $message }
cl-finished = All { $rounds } rounds done: every GPU holds the full sum (Σ all in every cell)
cl-rounds-done = of { $rounds } rounds done
cl-sum-all = Σ all
pl-col-layout-zero = layout (each with ZeRO-{ $zero })
pl-col-memory-short = memory/GPU
cl-col-max-sent-short = max sent by one GPU
cl-err-empty = a collective needs at least one rank, but the group is empty; pass one buffer per rank
cl-err-length = every rank must pass a buffer of the same length: rank 0 has { $expected } elements but rank { $rank } has { $found }; pad or split the tensor so all ranks match
cl-err-root = broadcast root { $root } is out of range for a group of { $n } ranks; choose a root in 0..{ $n }
cl-err-unsupported = { $kind } has no { $algorithm } schedule; use one of: { $supported }
cl-err-power-of-two = recursive halving/doubling { $kind } needs a power-of-two group, got { $n } ranks; use ring or direct (the all-reduce folds extra ranks in and supports any group size)
cl-err-too-many = contribution masks track at most { $max } ranks, got { $n }; animate a group of at most { $max }
cl-err-program-order = the program runs { $op } before any op produced { $tensor }: the schedule and its executor disagree; this is a bug in tplab, please report it
cl-err-foreign-op = the executor met { $op }, an op its program does not have: the schedule and the executor disagree; this is a bug in tplab, please report it
recompute-name-none = no
recompute-name-selective = selective
recompute-name-full = full
