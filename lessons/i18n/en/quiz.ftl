## The quiz crate's words: reading a typed answer, the certificate picture and the generated
## questions (gen:<kind>:<seed>). Numbers arrive already written the language's way.

## Reading a typed answer. $last is the last choice letter shown.
quiz-err-one-letter = type one letter from A to { $last }
quiz-err-letters = type the letters of every right choice (A to { $last }), e.g. "A, C"
quiz-err-not-a-number = '{ $input }' is not a number; type digits, e.g. 589,824 or 589824, or 0.5 (decimal point)
quiz-err-ordering = type every letter from A to { $last } exactly once, in the right order, e.g. "C A B"
quiz-number-hint = decimal point ".", thousands optionally grouped with ",": 589,824 or 589824; 0.25

## The certificate picture. $score is a percentage already written the language's way.
cert-pic-title = Certificate of Completion
cert-pic-course = Tensor Parallelism for Large Models
cert-pic-certifies = This certifies that
cert-pic-passed = passed the tplab exam { $exam } with a score of { $score }
cert-pic-date = Date
cert-pic-signed = Signed by issuer key { $key }
cert-pic-unsigned = Unsigned: anyone could have made this picture
cert-pic-verify = Check it with: tplab cert verify FILE --issuer KEY

## Generated questions. A model in words: $heads is one of the gen-heads-* messages.
gen-model-gpt = { $name } (hidden { $hidden }, { $heads }, FFN { $ffn }, { $layers } layers)
gen-model-llama = { $name } (hidden { $hidden }, { $heads }, FFN { $ffn }, { $layers } layers; SwiGLU MLP, RMSNorm, no biases)
gen-heads-mqa = { $heads } query heads sharing one KV head (multi-query attention)
gen-heads-gqa = { $heads } query heads, { $kv } KV heads
gen-heads-mha = { $heads } heads
gen-unit-mib = MiB
gen-unit-kib = KiB

## The design lab's challenges (gen:design-split). $goal and $why are the design view's
## design-ch-<id>-goal and -why; a plan is its weights' splits, joined by "; ".
gen-weight-qkv = QKV projection
gen-weight-out = output projection
gen-weight-fc1 = fc1
gen-weight-fc2 = fc2
gen-split-replicate = whole on every GPU
gen-split-columns = by columns
gen-split-rows = by rows
gen-weight-split = { $weight } { $split }
gen-design-prompt = Design lab, challenge { $stage } (on { $tp } GPUs): { $goal } Which split does it? tplab runs each plan against the unsharded reference and counts its collectives.
gen-design-prompt-sp = Design lab, challenge { $stage } (on { $tp } GPUs): { $goal } Sequence parallelism is on. Which split does it? tplab runs each plan against the unsharded reference and counts its collectives.
gen-miss-refused = The program is refused: { $rule }.
gen-miss-differs = Its numbers differ from the reference.
gen-miss-count = All-reduces in its forward pass: { $ar } (the goal: { $goalar }); other collectives: { $others } (the goal: { $goalothers }).
gen-miss-cheap = It sends { $have } times the best split's bytes; the goal is at least { $want } times.
gen-miss-by-hand = Place the collectives yourself (manual mode).
gen-miss-elsewhere = The program is refused, but at { $op } ({ $rule }), not where the goal asks.
gen-miss-not-refused = The program is valid: nothing reads a partial sum.
gen-miss-run-anyway = It has not been run anyway yet: run the refused program to see how far it is from the reference.
gen-miss-sp = Turn sequence parallelism on.
gen-miss-still = All-reduces still in its forward pass: { $n }.
gen-miss-whole = Split every weight: a whole weight on every GPU is not tensor parallelism.

## Ring all-reduce bytes (gen:ring-bytes).
gen-ring-prompt = A ring all-reduce sums a [{ $tokens }, { $hidden }] { $dtype } activation (batch { $batch } × sequence { $seq } tokens, hidden { $hidden }) over TP={ $tp } GPUs. How many MiB does each GPU send? (1 MiB = 1,048,576 bytes; two decimals are enough, with a decimal point.)
gen-ring-why = The tensor is { $tokens } × { $hidden } × { $size } bytes = { $payload } bytes ({ $payloadmib } MiB). A ring all-reduce sends 2(N−1)/N of it from each GPU: 2·{ $steps }/{ $tp } × { $payload } = { $sent } bytes = { $answer } MiB ({ $steps } steps of reduce-scatter, then { $steps } of all-gather).

## Can a model be split at this TP (gen:tp-validity); $hmod and $fmod are "a % b = r".
gen-tp-valid = Valid: every GPU gets whole heads and an equal share of the FFN
gen-tp-heads-fail = Invalid: the heads cannot be divided evenly over the GPUs (heads % TP ≠ 0)
gen-tp-ffn-fail = Invalid only because of the FFN: the heads divide, but FFN % TP ≠ 0
gen-tp-prompt = Can { $model } be split with tensor parallelism TP={ $tp }?
gen-tp-why-valid = { $hmod } and { $fmod }: each GPU holds { $each } heads and { $columns } FFN columns.
gen-tp-why-heads = { $hmod }: { $heads } heads cannot be split over { $tp } GPUs, and a head cannot be cut (its softmax needs all of its columns).
gen-tp-why-ffn = { $hmod } divides, but { $fmod }: fc1's { $ffn } columns cannot be shared equally over { $tp } GPUs.
gen-tp-fb-fraction = { $mod }: some GPU would get a fraction of a head.
gen-tp-fb-ffn-unequal = { $mod }: the FFN columns do not share out equally.
gen-tp-fb-heads-divide = { $mod }: the heads divide evenly.
gen-tp-fb-heads-already = { $mod }: the heads already fail, so the FFN is not the only reason.
gen-tp-fb-ffn-divides = { $mod }: the FFN width divides evenly.
gen-split-why = { $why } Valid TP sizes up to 16 for this model: { $valid }.

## Grouped-query attention at this TP (gen:gqa-validity); $tpmod is "TP % kv = r".
gen-gqa-own = Valid: each GPU holds whole KV heads of its own (the KV heads divide evenly among the GPUs)
gen-gqa-share = Valid only by giving each KV head to a group of GPUs that share it (the GPUs divide evenly among the KV heads)
gen-gqa-heads-fail = Invalid: the query heads cannot be divided evenly (heads % TP ≠ 0)
gen-gqa-kv-fail = Invalid: the KV heads can be neither split nor evenly shared
gen-gqa-prompt = { $name } has { $heads } query heads and { $kv } KV heads (grouped-query attention). Can its attention be split with TP={ $tp }?
gen-gqa-mechanisms = Both frameworks accept it today (2025): vLLM gives every GPU a whole copy of the KV head it needs, so the GPUs that share a KV head each hold the same copy, as tplab does; current Megatron-Core keeps the KV weights split and all-gathers the QKV activations instead. Earlier Megatron-LM releases required the KV heads to divide evenly among the GPUs and refused it.
gen-gqa-why-own = { $kvmod }: each GPU holds { $kvper } KV head(s) and the { $qper } query heads that read them.
gen-gqa-why-share = { $tp } > { $kv } KV heads but { $tpmod }: each KV head serves the query heads of { $groups } GPUs. { $mechanisms }
gen-gqa-why-heads = { $hmod }: the { $heads } query heads cannot be split over { $tp } GPUs, whatever the KV heads.
gen-gqa-why-kv = { $kvmod } and { $tpmod }: the { $kv } KV heads can be neither split over { $tp } GPUs nor shared by equal groups of them.
gen-gqa-fb-heads-already = { $hmod }: the query heads already fail.
gen-gqa-fb-not-whole = { $kvmod }: { $tp } GPUs cannot each hold whole KV heads.
gen-gqa-fb-no-sharing = { $kvmod }: no sharing is needed, every GPU has whole KV heads.
gen-gqa-fb-no-groups = { $tpmod }: equal groups of GPUs cannot share the KV heads.
gen-gqa-fb-heads-divide = { $hmod }: the query heads divide evenly.
gen-gqa-fb-heads-fail-here = { $hmod }: it is the query heads that fail here.
gen-gqa-fb-one-rule = One rule holds: { $kvmod } or { $tpmod }.

## Weight memory per GPU (gen:weight-memory). $ways is the TP size (with a case suffix where
## the language needs one).
gen-mem-prompt = { $model } is split with TP={ $tp }, weights in bf16 (2 bytes). How many MiB of Transformer-block weights does each GPU hold (embeddings excluded)?
gen-mem-count-llama = QKV { $h }·{ $h3 } and out-proj { $h }·{ $h } (no biases), the SwiGLU MLP's gate and up { $h }·{ $f } each and down { $f }·{ $h }, two RMSNorms { $h } each = { $full } parameters
gen-mem-count-gpt = QKV { $h }·{ $h3 } + { $h3 }, out-proj { $h }·{ $h } + { $h }, fc1 { $h }·{ $f } + { $f }, fc2 { $f }·{ $h } + { $h }, two LayerNorms { $h4 } = { $full } parameters
gen-mem-split-llama = All matrices are split { $ways } ways; only the two RMSNorms ({ $norms } values per layer) are replicated.
gen-mem-split-gpt = QKV, out-proj, fc1, fc2 and the QKV and fc1 biases are split { $ways } ways; the LayerNorms and the two row-parallel biases ({ $values } values per layer) are replicated.
gen-mem-why = Per layer: { $count }; all { $layers } layers in bf16: { $fullmib } MiB. { $split } Per GPU: { $bytes } bytes = { $answer } MiB.
gen-mem-show-me = { $name }'s blocks at TP={ $tp } in the Memory view (it counts f32: twice the bf16 bytes)

## All-reduces of L layers (gen:all-reduce-count).
gen-ar-prompt = A model of { $layers } Megatron-style Transformer layers runs at TP={ $tp }. How many all-reduces do its layers issue in one forward plus backward pass (no sequence parallelism, no activation recomputation, embeddings excluded)?
gen-ar-why = Per layer: forward 2 (g after the attention out-proj, g after fc2), backward 2 (f before fc1, f before QKV). The engine's schedule for { $layers } layers issues { $forward } forward + { $backward } backward = { $total }. TP does not change the count, only the bytes. (Full recomputation would re-run the two forward all-reduces, 6 per layer; a vocabulary-parallel embedding and loss add their own.)

## Sequence parallelism's collectives (gen:sp-collectives).
gen-sp-what-ag = all-gathers
gen-sp-what-rs = reduce-scatters
gen-sp-note-ag = Forward: f before each column-parallel layer gathers the sequence shards. Backward: g's conjugate gathers the output gradient, and each column-parallel layer gathers its input again for the weight gradient, because only the shard was kept (Megatron overlaps this with the input-gradient product).
gen-sp-note-rs = Forward: g after each row-parallel layer sums the partial outputs and leaves each GPU its 1/N of the tokens. Backward: f's conjugate does the same to the input gradient.
gen-sp-prompt = A model of { $layers } Megatron-style Transformer layers runs at TP={ $tp } with sequence parallelism. How many { $what } do its layers issue in one forward plus backward pass?
gen-sp-why = Per layer the engine's trace has { $nforward } forward ({ $forward }) and { $nbackward } backward ({ $backward }), { $perlayer } in all; × { $layers } layers = { $total }. { $note }

## Which TP sizes split a model (gen:valid-tp-sizes).
gen-vt-prompt = Which tensor-parallel sizes can split { $model }? (Select all that apply.)
gen-vt-choice = TP={ $tp }
gen-vt-works = TP={ $tp } works: { $hmod } and { $fmod }.
gen-vt-heads = TP={ $tp } fails: { $hmod }, heads cannot be cut.
gen-vt-ffn = TP={ $tp } fails: { $fmod }, the FFN does not share out.
gen-vt-why = A TP size must divide the heads ({ $heads }) and the FFN width ({ $ffn }). Valid sizes up to 16: { $valid }.

## KV cache per token on one GPU (gen:kv-cache). $kvfrom is the KV head count (with the
## ablative suffix where the language needs one).
gen-kv-prompt = { $name } ({ $layers } layers, { $kv } KV heads of size { $hd }) is served in bf16 with TP={ $tp }. How many KiB of KV cache does each GPU hold per token of context, over all layers? (1 KiB = 1024 bytes)
gen-kv-why = K and V, per layer, per KV head on the GPU: 2 × { $layers } layers × { $pergpu } KV head(s) × { $hd } × 2 bytes = { $bytes } bytes = { $answer } KiB.
gen-kv-replicated = TP={ $tp } > { $kv } KV heads: each GPU keeps a copy of one KV head's cache, so beyond TP={ $kv } the cache per GPU stops shrinking.

## The bubble of a pipeline schedule (gen:pipeline-bubble). $schedule is one of the names below;
## $expression is the engine's closed form, $fraction the measured idle share in lowest terms.
gen-bubble-gpipe = GPipe
gen-bubble-1f1b = 1F1B
gen-bubble-interleaved = interleaved 1F1B
gen-bubble-zb-h1 = ZB-H1
gen-bubble-prompt = A pipeline of { $stages } stages runs { $microbatches } micro-batches per step with the { $schedule } schedule (a forward costs 1, a backward 2). What percentage of the stages' time is bubble (idle)? Give one decimal.
gen-bubble-prompt-virtual = A pipeline of { $stages } stages, each holding { $virtual } chunks of layers (virtual stages), runs { $microbatches } micro-batches per step with the { $schedule } schedule (a forward costs 1, a backward 2, per chunk). What percentage of the stages' time is bubble (idle)? Give one decimal.
gen-bubble-why = The schedule's bubble is { $expression } = { $fraction } of the stages' time: { $answer }%.
gen-unit-percent = %

## Peak activations of one pipeline stage (gen:stage-memory). $n is the count a choice or the
## answer names; $p, $m, $v the stages, micro-batches and virtual stages; $s the stage asked
## about; $ps is P − s; $all is V·M; $peaks the engine's peak of every stage, in order.
gen-sm-prompt = A pipeline of { $stages } stages (numbered from 0; stage 0 holds the first layers) runs { $microbatches } micro-batches per step with the { $schedule } schedule. At its peak, the activations of how many micro-batches does stage { $s } hold at once?
gen-sm-prompt-virtual = A pipeline of { $stages } stages (numbered from 0), each holding { $virtual } chunks of layers (virtual stages), runs { $microbatches } micro-batches per step with the { $schedule } schedule. At its peak, how many chunk activations (one micro-batch through one chunk) does stage { $s } hold at once?
gen-sm-choice = { $n } × one micro-batch's activations
gen-sm-choice-chunks = { $n } × one micro-batch's activations in one chunk
gen-sm-fb-one = A micro-batch's activations are not freed when its forward moves on to the next stage: they are kept until its backward has used them.
gen-sm-gpipe-fb-1f1b = { $n } = P − s is 1F1B's count for stage { $s }. GPipe runs all { $m } forwards before its first backward, so nothing is freed until then.
gen-sm-gpipe-fb-stages = { $n } is the number of stages, not of micro-batches held: GPipe keeps all { $m } forwards' activations until the backwards start.
gen-sm-gpipe-fb-warmup = { $n } = P − s − 1 is 1F1B's warm-up for stage { $s }. GPipe has no warm-up limit: all { $m } forwards run first.
gen-sm-gpipe-fb-slots = { $n } = M + P − 1 is the number of forward time slots the pipeline needs to push { $m } micro-batches through { $p } stages (the bubble formula's denominator), not the activations a stage holds.
gen-sm-gpipe-fb-share = { $n } = M / P shares the micro-batches out among the stages, but every stage runs every micro-batch through its own layers and keeps all { $m }.
gen-sm-1f1b-fb-all = { $n } is GPipe's count, every micro-batch of the step. 1F1B starts its backwards early: after stage { $s }'s warm-up, each backward frees one micro-batch as each forward adds one.
gen-sm-1f1b-fb-warmup = { $n } = P − s − 1 counts the warm-up forwards alone; one forward more is held before stage { $s }'s first backward frees anything (and never more than the { $m } micro-batches of the step).
gen-sm-1f1b-fb-reversed = { $n } = s + 1 counts from the wrong end: stage 0 waits longest for its first backward, which comes back through every stage, so it holds the most, and stage s holds P − s.
gen-sm-1f1b-fb-first = { $n } = P is stage 0's count. Later stages get their first backward sooner: stage s holds P − s (at most M).
gen-sm-1f1b-fb-uncapped = { $n } = P − s would be right with at least P − s micro-batches in the step, but there are only { $m }: no stage ever holds more than M.
gen-sm-zb-fb-1f1b = { $n } = P − s would be 1F1B's count, which frees a micro-batch at its backward. ZB-H1 frees it only after its W (the weight gradient needs the activations), which trails its forward by P − 1 micro-batches on every stage.
gen-sm-zb-fb-all = { $n } is GPipe's count, every micro-batch of the step. ZB-H1 frees each micro-batch after its W, P − 1 micro-batches behind its forward.
gen-sm-zb-fb-lag = { $n } = P − 1 counts the W's lag but not the forward in flight: with the W trailing by P − 1 micro-batches, P are alive at once (at most M).
gen-sm-zb-fb-stages = { $n } = P needs at least P micro-batches in the step; with { $m }, at most { $m } are ever alive.
gen-sm-int-fb-1f1b = { $n } = P − s is plain 1F1B's count in whole micro-batches. Interleaved, stage { $s } holds { $v } chunks and warms up with 2(P − s − 1) + (V − 1)·P chunk forwards, so it holds more chunk activations.
gen-sm-int-fb-times-v = { $n } = V·(P − s) scales 1F1B's count by the chunks, but Megatron-LM's interleaved warm-up is 2(P − s − 1) + (V − 1)·P chunk forwards, plus the one in flight.
gen-sm-int-fb-all = { $n } = V·M is every chunk of every micro-batch: a stage holds them all only when it runs every forward first (M = P). Here the backwards start after the warm-up.
gen-sm-int-fb-warmup = { $n } counts the warm-up chunk forwards alone, 2(P − s − 1) + (V − 1)·P; one chunk forward more is held before the first backward frees one.
gen-sm-why-gpipe = GPipe runs all { $m } forwards before the first backward, so at its peak every stage holds the activations of all M = { $n } micro-batches. The engine's run, stage by stage: { $peaks }.
gen-sm-why-1f1b = Stage { $s } runs P − s − 1 = { $warmup } warm-up forwards, then one forward more before its first backward frees one: min(P − s, M) = min({ $ps }, { $m }) = { $n }. The engine's run, stage by stage: { $peaks }.
gen-sm-why-zb-h1 = ZB-H1 frees a micro-batch's activations only after its W, which trails its forward by P − 1 micro-batches on every stage, so each stage holds min(P, M) = min({ $p }, { $m }) = { $n }. The engine's run, stage by stage: { $peaks }.
gen-sm-why-interleaved = Megatron-LM's interleaved schedule warms stage { $s } up with 2(P − s − 1) + (V − 1)·P = { $chunkwarmup } chunk forwards, then one more before its first backward frees one: { $chunkwarmup } + 1 = { $n } chunk activations, each 1/{ $v } of the stage's layers (never more than V·M = { $all }). The engine's run, stage by stage: { $peaks }.

## An MoE model in the Planner (the Show me of the expert-parallel questions).
gen-moe-show-me = { $name } on { $gpus } GPUs in the Planner, which prices its expert-parallel layouts

## Bytes of an MoE dispatch all-to-all (gen:all-to-all-bytes). $mib is a byte count in MiB, two
## decimals; $epm is EP − 1.
gen-a2a-prompt = { $name } (hidden { $hidden }, { $experts } experts, top-{ $k } routing) runs with expert parallelism EP = { $ep }, bf16 activations and { $tokens } tokens on each GPU. With the routing balanced, how many bytes does each GPU send to other GPUs in one dispatch all-to-all? (1 MiB = 1024 × 1024 bytes)
gen-a2a-choice = { $mib } MiB
gen-a2a-fb-local = { $mib } MiB counts every row, but 1/EP of them are for experts on the GPU itself and never leave it: multiply by (EP − 1)/EP.
gen-a2a-fb-k = { $mib } MiB sends each token once, but a token goes to each of its k = { $k } experts: k rows, usually on different GPUs.
gen-a2a-fb-over-ep = { $mib } MiB is the 1/EP that stays: the rows for the GPU's own experts. The other (EP − 1)/EP leave.
gen-a2a-fb-both = { $mib } MiB adds the combine (the results coming back) to the dispatch; the question asks for one all-to-all.
gen-a2a-fb-every-rank = { $mib } MiB sends every row to all EP − 1 other GPUs, like a broadcast; an all-to-all sends each row only to the GPU that holds its expert.
gen-a2a-why = Each of the { $tokens } tokens sends its hidden vector to each of its k = { $k } experts, and the 1/EP of those rows that are for the GPU's own experts never leave it: tokens · k · h · 2 bytes · (EP − 1)/EP = { $tokens } · { $k } · { $hidden } · 2 · { $epm }/{ $ep } = { $bytes } bytes = { $mib } MiB (tplab's cost model). The combine sends as much back, and the backward pass repeats both.

## Which expert-parallel layout is valid (gen:ep-layout). $mod is a remainder, e.g. "8 % 3 = 2".
gen-ep-prompt = { $name } ({ $experts } experts per MoE layer, { $heads } attention heads, { $kv } KV heads, expert FFN width { $ffn }, { $layers } layers) is trained on { $gpus } GPUs with Megatron-Core's expert parallelism, each expert split by the same TP as the attention (ETP = TP) and no context parallelism. Which layout is valid (by the layout rules alone, memory aside)?
gen-ep-choice = TP { $tp } × PP { $pp } × DP { $dp }, EP { $ep }
gen-ep-fb-dp = EP { $ep } does not divide DP { $dp } ({ $mod }): Megatron-Core needs ETP × EP to divide TP × CP × DP, and with ETP = TP and no CP that is DP divisible by EP: the expert-parallel groups are made of data-parallel ranks.
gen-ep-fb-experts = EP { $ep } does not divide the { $experts } experts ({ $mod }): every EP rank must hold the same number of whole experts.
gen-ep-fb-gpus = TP × PP × DP = { $tp } × { $pp } × { $dp } = { $needed }, not { $gpus }: EP is not a fourth factor of the GPU count. It is drawn from the DP ranks, so this layout leaves GPUs without work.
gen-ep-fb-heads = TP { $tp } does not divide the attention heads ({ $mod }): each GPU must hold whole heads.
gen-ep-fb-kv = TP { $tp } does not divide the KV heads ({ $mod }): tplab's planner asks for whole KV heads on every GPU (Megatron-LM's rule; current Megatron-Core also accepts a TP that is a multiple of the KV heads by all-gathering the QKV activations, lesson 5).
gen-ep-fb-ffn = TP { $tp } does not divide the FFN width ({ $mod }): the columns of fc1 must share out equally.
gen-ep-fb-layers = PP { $pp } does not divide the layers ({ $mod }): every pipeline stage gets the same number of layers.
gen-ep-why = A layout is valid when TP × PP × DP = { $gpus } GPUs (EP adds no GPUs: the expert layers reuse the same GPUs), EP divides DP and the { $experts } experts, TP divides the heads, KV heads and FFN width, and PP divides the layers. { $layout }: { $tp } × { $pp } × { $dp } = { $gpus }, { $dpmod }, { $emod }. At DP { $dp } the planner allows EP { $eps }. "EP divides DP" is this question's setting, ETP = TP without context parallelism: Megatron-Core's rule since MoE parallel folding (arXiv 2504.14960) is that ETP × EP divides TP × CP × DP, so with ETP 1 an EP could also take TP ranks (lesson 16).
