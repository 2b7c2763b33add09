# The Pipeline view (app/src/views/pipeline.rs) and the Cluster view (app/src/views/cluster.rs).

view-pipeline = Pipeline
view-cluster = Cluster

pp-title = Pipeline schedules: who works when
pp-schedule = schedule
pp-schedule-gpipe = GPipe
pp-schedule-1f1b = 1F1B
pp-schedule-interleaved = interleaved 1F1B
pp-schedule-zb-h1 = ZB-H1 (zero bubble)
pp-stages = stages (P)
pp-microbatches = micro-batches (M)
pp-virtual = virtual stages (V)
pp-model = model
pp-gpu = GPU
pp-tp = TP
pp-dp = data-parallel replicas
pp-err-multiple = The interleaved schedule needs the micro-batches to be a multiple of the stages (Megatron-LM's rule): { $m } micro-batches over { $p } stages; use { $lower } or { $upper } micro-batches.
pp-err-tp = TP { $tp } does not divide this model's heads, KV heads and FFN width; use { $valid }.
pp-use-m = Use { $m } micro-batches
pp-use-tp = Use TP { $tp }
pp-predict-question = Predict first: with { $schedule }, { $p } stages and { $m } micro-batches, what fraction of the GPUs' time is the bubble (idle)?
pp-predict-skip = Skip, show the schedule
pp-predict-toggle = Ask me to predict the bubble first
pp-bubble-measured = Bubble measured from the schedule: { $num }/{ $den } = { $percent } of the GPUs' time is idle.
pp-bubble-formula = Formula { $expression } = { $num }/{ $den } ({ $source }).
pp-source-gpipe = Huang et al. 2019, GPipe
pp-source-1f1b = Narayanan et al. 2021, Megatron-LM
pp-source-interleaved = Narayanan et al. 2021, Megatron-LM, interleaved schedule
pp-source-zb-h1 = Qi et al. 2023, Zero Bubble Pipeline Parallelism
pp-bubble-no-formula = No closed form for these times: the bubble is measured only.
pp-predict-right = You predicted { $said }: right.
pp-predict-wrong = You predicted { $said }; the schedule says otherwise. Count the empty space in each row.
pp-step-time = One training step: { $schedule } of schedule, then { $dp } of data-parallel gradient all-reduce.
pp-play = Play
pp-pause = Pause
pp-previous = Previous event
pp-next = Next event
pp-restart = From the start
pp-speed = speed
pp-clock = Clock: { $time }
pp-assumes = Times from the cost model: { $model } on { $gpu }, TP { $tp } over { $tp_link }, sequence { $seq }, one sequence per micro-batch, { $layers } layers per box. F (forward) { $forward } including its two all-reduces per layer ({ $all_reduce } each); B (backward) { $backward }; W (weight gradient, ZB-H1 only) { $weight }; a send between stages { $send } over { $pp_link }, drawn as an instant; the gradient all-reduce over { $dp } replicas { $dp_time } over { $dp_link }, not overlapped. Left out: the output layer's extra work on the last stage.
pp-stage = stage { $s }
pp-peak = peak { $n }
pp-dp-box = DP
pp-hover-dp = Stage { $s }: gradient all-reduce over the data-parallel replicas, { $time } over { $link }
pp-chart-a11y = Pipeline chart: { $schedule }, { $p } stages, { $m } micro-batches, bubble { $percent }; peak activations per stage: { $peaks }
pp-pass-f = forward
pp-pass-b-input = backward (input gradient)
pp-pass-b = backward
pp-pass-w = weight gradient
pp-hover-box = Stage { $s }: { $pass } of micro-batch { $mb } through model chunk { $chunk }, { $time } (from { $from } to { $to })
pp-legend-boxes = Each box is one micro-batch through one stage, in that micro-batch's colour: F forward (solid), B backward (paler), W weight gradient (palest). The number is the micro-batch; empty space in a row is the bubble.
pp-legend-chunks = Interleaved: each stage holds V chunks of layers; the letter after the number is the chunk (a, b, …), and every second chunk is drawn darker.
pp-legend-tp = Dark marks at the bottom of F and B boxes: the TP all-reduces, two per layer each way, inside the stage's compute.
pp-legend-sends = Arrows between rows: a stage sends its activations to the next (dark) and gradients back to the previous one (orange).
pp-legend-dp = DP (grey) after each row: the stage's gradient all-reduce over the data-parallel replicas, once all its micro-batches are done.
pp-legend-peak = Peak: the most micro-batches whose activations a stage holds at once (kept from its forward until its backward frees them).

cu-title = Cluster: which GPU holds what
cu-presets = Scenario:
cu-preset-175b-one-node = 175B on one 8-GPU node
cu-preset-70b-serve-tp4 = 70B served at TP 4
cu-preset-1t-3d = A trillion parameters on 3072 GPUs
cu-preset-planner-64 = GPT-3 175B on 64 A100s
cu-preset-custom = Your Planner inputs
cu-layout-from = Layout:
cu-source-guide = the guide's
cu-source-planner = the planner's best
cu-colour-by = Colour by:
cu-by-tp = TP group
cu-by-stage = pipeline stage
cu-by-replica = data-parallel replica
cu-story-175b-one-node = The guide trains a 175B model with Megatron-LM, each layer's weights split over the 8 GPUs of one NVLink node. The weights fit; training does not: gradients and Adam's states need far more than one node.
cu-story-70b-serve-tp4 = The guide serves a 70B chat model with vLLM at tensor parallel size 4: each of four GPUs holds a quarter of every weight matrix; the other four GPUs of the node are free.
cu-story-1t-3d = Narayanan et al. 2021 trained a 1T model on 3072 A100s: TP 8 inside each node (NVLink), 64 pipeline stages across nodes, 6 data-parallel replicas on top.
cu-story-planner-64 = The planner's default cluster: GPT-3 175B on 64 A100s in 8 nodes; Korthikanti et al. 2022 trained it as TP 8 inside each node and 8 pipeline stages across them.
cu-story-custom = Your Planner inputs: { $model } on { $gpus } { $gpu } GPUs, { $per_node } per node, nodes joined by { $link }; the layout is the planner's best.
cu-planning = The planner is ranking layouts…
cu-planner-nothing = No layout fits this cluster for training: the guide's layout is drawn instead.
cu-planner-nothing-custom = No layout fits this cluster for training: go back to the Planner for why, and give it more GPUs or memory.
cu-layout = TP { $tp } × PP { $pp } × DP { $dp } = { $gpus } GPUs ({ $nodes ->
    [one] one node
   *[other] { $nodes } nodes
} of { $per_node }): { $model } on { $gpu }
cu-serving-memory = Served: { $weights } of 2-byte weights per GPU (the model over TP { $tp }); the rest of each GPU's memory holds the KV cache.
cu-memory-fits = Per GPU { $total } of { $usable } usable (weights { $weights }, gradients { $gradients }, optimizer { $optimizer }, activations { $activations }): it fits. One training step: { $seconds } s.
cu-memory-no-fit = Per GPU { $total } but only { $usable } usable (weights { $weights }, gradients { $gradients }, optimizer { $optimizer }, activations { $activations }): this layout does not fit for training.
cu-overview-a11y = Cluster: { $nodes ->
    [one] one node
   *[other] { $nodes } nodes
}, { $gpus } GPUs in use, { $model }
cu-overview-hover = Each box is a node, each cell a GPU in its colour; click a node to see its GPUs below.
cu-key-tp = Same colour: one TP group, the GPUs that split every layer of their stage between them (they all-reduce twice per layer each way).
cu-key-stage = Same colour: one pipeline stage, the GPUs that hold the same layers (the colours repeat every 8 stages).
cu-key-replica = Same colour: one data-parallel replica, a whole copy of the model that trains on its own share of the batch.
cu-node = Node { $node } (the nodes are numbered 0 to { $last }):
cu-gpu-unused = GPU { $gpu }: unused
cu-gpu-title = GPU { $gpu } (rank { $rank })
cu-gpu-place = TP rank { $tp } · stage { $stage } · replica { $replica }
cu-gpu-layers = layers { $first } to { $last }
cu-gpu-heads = heads { $h0 } to { $h1 }
cu-gpu-ffn = FFN columns { $f0 } to { $f1 }
cu-gpu-link-tp = TP over { $link }
cu-gpu-link-pp = to the next stage over { $link }
cu-gpu-link-dp = DP over { $link }
cu-gpu-links-none = no collective: one GPU holds the whole model
cu-links = The links each collective uses:
cu-link-across = across nodes, over { $link }
cu-link-inside = inside the node, over { $link }
cu-link-tp = TP all-reduces (groups of { $tp }, two per layer each way): { $how }
cu-link-pp = Pipeline sends between { $pp } stages: { $how }
cu-link-dp = Gradient all-reduce over { $dp } replicas: { $how }
cu-link-none = One GPU: no collective.
pl-on-its-gpus = See the winner, { $layout }, on its GPUs
