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
err-heads-tp = { $heads } heads cannot be split over { $tp } GPUs: each GPU must hold whole heads (heads % tp == 0); valid TP sizes: { $valid }
err-ffn-tp = FFN width { $ffn } cannot be split over { $tp } GPUs: fc1's columns and fc2's rows must divide evenly (ffn % tp == 0); valid TP sizes: { $valid }
err-too-large = this scenario needs about { $needed } of tensors, over the { $limit } guard; reduce seq, batch, hidden or layers
err-seq-tp = sequence parallelism splits the sequence over the GPUs: seq { $seq } cannot be split over { $tp } GPUs (seq % tp == 0); valid TP sizes: { $valid }; or make seq a multiple of { $tp }
err-kv-heads = { $kv } KV heads cannot serve { $heads } query heads: each KV head must serve the same number of query heads (heads % kv_heads == 0); valid KV head counts: { $valid }
err-kv-tp = { $kv } KV heads cannot be spread over { $tp } GPUs: each GPU needs whole KV heads (kv_heads % tp == 0) or an equal share of one (tp % kv_heads == 0); valid TP sizes: { $valid }
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
pg-gqa-replicated = { $head }; TP={ $tp } > { $kv } KV heads, so each KV head is replicated on { $copies } GPUs (vLLM's rule, tp % kv_heads == 0): { $holders }. The copies' K/V gradients are all-reduced within each group.
pg-gqa-split = { $head }; each GPU holds { $per } whole KV head(s) (Megatron-LM's rule, kv_heads % tp == 0), no copies.
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
