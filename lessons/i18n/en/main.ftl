# tplab UI strings, English. Every id here must exist in tr.ftl too (a test checks).
language = Language
lessons-title = Lessons
lessons-invalid = The built-in lessons have problems:
lesson-position = Lesson { $n } of { $total }
show-me = Show me
show-me-hint = Opens { $target }
show-me-menu = Show me in the app ({ $n }) ⏷
quiz-title = Quiz
quiz-question-position = Question { $n } of { $total }
quiz-check = Check answer
quiz-next = Next question
quiz-new-set = New questions
quiz-correct = Correct!
quiz-wrong = Not quite. The answer is: { $answer }
quiz-score = Score: { $correct }/{ $answered }
quiz-number = Your answer (a number)
quiz-unit = Unit: { $unit }
quiz-order-hint = Click the items in the right order:
quiz-order-chosen = Your order:
quiz-order-reset = Start over
quiz-single-hint = Choose one answer.
quiz-multiple-hint = Choose every right answer.
quiz-why = Why:
quiz-done = You answered every question. Press "New questions" for a fresh set.
quiz-invalid = The question banks have problems:

# --- Exam and certificates in the Quiz view (issue 12) ---
quiz-mode-practice = Practice
quiz-mode-exam = Certificate exam
quiz-enter-hint = Enter checks the answer, then moves to the next question.
exam-title = Certificate exam
exam-intro = { $length } questions drawn from a pool of { $pool }; every sitting draws new ones. Nothing is marked until you submit. Pass mark: { $pass }%.
exam-name = Your name, as the certificate will show it:
exam-start = Start the exam
exam-signed-by = Certificates are signed by issuer key { $fingerprint }.
exam-unsigned = No issuer key is set up, so certificates will be unsigned (anyone could write one). A teacher makes a key with: tplab cert keygen
exam-issuer-error = The issuer key cannot be used: { $error }
exam-store-error = Progress cannot be saved, so the exam cannot start: { $error }
exam-position = Question { $n } of { $total } · { $answered } answered
exam-previous = Previous
exam-next = Next
exam-submit = Submit the exam
exam-enter-hint = Enter saves the answer and moves on; on the last question it submits the exam.
exam-unanswered = { $count } unanswered (they count as wrong)
exam-passed = Passed: { $correct } of { $total } right ({ $percent }%)
exam-failed = Not passed: { $correct } of { $total } right ({ $percent }%); the pass mark is { $pass }%.
exam-saved = The result is saved in your progress (sitting seed { $seed }).
exam-save-failed = The result could not be saved, so no certificate was written: { $error }
exam-cert-saved = Certificate saved: { $png }
exam-cert-failed = Your pass is saved in your progress, but the certificate could not be written: { $error }
exam-cert-signed = Signed by issuer key { $fingerprint }: anyone can check it with tplab cert verify FILE --issuer KEY.
exam-cert-unsigned = Unsigned: the certificate is consistent, but anyone could have written it.
exam-cert-proves = A signed certificate proves that the holder of the issuer key issued this record and that it is unchanged; it does not prove who typed the name or sat the exam.
exam-revisit = Topics to revisit
exam-revisit-why = A sitting that did not pass shows no answers: study these lessons, practise in the quiz (it explains every answer), then take a new sitting (new questions, new numbers).
exam-revisit-lesson = { $title } — { $missed } of { $asked } missed
exam-revisit-other = General questions — { $missed } of { $asked } missed
exam-review = Review
exam-right = Right
exam-wrong = Wrong; the answer is: { $answer }
exam-not-answered = Not answered; the answer is: { $answer }
exam-retake = New sitting (new questions)

## --- Serve view (helper S, issue 15) ---
serve-title = Serve: one prompt, answered at TP 1, 2 and 4
serve-intro = The tiny character-level model, trained on the guide, answers on virtual GPUs: a prefill of the prompt, then one token at a time. Each GPU keeps the KV cache of its own KV heads and each token pays two all-reduces per layer. The three columns must produce the same text as the unsharded reference.
serve-prompt = Prompt
serve-tokens = Tokens
serve-train-steps = Training steps
serve-gqa = Grouped-query attention (2 KV heads)
serve-gqa-hint = The 4 query heads share 2 KV heads. At TP=2 each GPU caches one KV head; at TP=4 each KV head is cached on two GPUs, so the cache per GPU stops shrinking.
serve-generate = Generate
serve-training = Training the tiny model on the guide…
serve-decoding = Decoding…
serve-failed = The request failed: { $error }
serve-reference = Unsharded reference: { $text }
serve-column = TP = { $tp }
serve-token-time = Per token: compute { $compute } ms, collectives { $collective } ms (measured on this computer)
serve-kv = KV cache per GPU: { $bytes } ({ $tokens } of { $context } positions)
serve-compute = compute
serve-collectives = collectives
serve-axis-token = token
serve-axis-ms = ms
serve-check-pass = Same text as the reference: { $same }; largest logit difference { $error } (allowed { $tolerance })
serve-check-fail = Differs from the reference! Same text: { $same }; largest logit difference { $error } (allowed { $tolerance })
serve-yes = yes
serve-no = no
serve-measured-note = The virtual GPUs share this computer's processor, so their times show the order of the work, not a GPU's speed; the curve below is the cost model for real GPUs.
serve-scenario-title = The guide's scenario: a 70B chat model served on 4 GPUs (tensor parallel size 4 in vLLM)
serve-scenario-tp4 = Llama-3 70B on 4 × { $gpu }, one sequence with { $context } tokens of context, CUDA graphs: { $ms } ms per token ({ $tps } tokens/s) with NCCL's all-reduces, { $ms_custom } ms with a custom one-shot all-reduce (vLLM, TensorRT-LLM). Per token: each GPU reads its quarter of the weights in { $weights } ms and its share of the KV cache in { $kv } ms; the { $count } all-reduces (two a layer and the embedding's) take { $allreduce } ms with NCCL ({ $one } µs each) or { $allreduce_custom } ms custom; the fixed costs (kernel launches, sampling) { $fixed } ms. Memory per GPU: { $memory }.
serve-scenario-knee = From TP = { $tp } on, doubling the GPUs saves less than 10%: the weight reads keep halving, but the all-reduces' latency does not, and TP = 16 crosses the node boundary onto InfiniBand.
serve-axis-tp = GPUs (TP)
serve-token-table = The bars as numbers (ms per token)
serve-curve-table = The curves as numbers (ms per token, per TP)
serve-curve-fits = fits in memory
serve-axis-ms-token = ms per token (model)
serve-curve-total = time per token
serve-curve-reads = HBM reads (weights + KV cache)
serve-curve-custom = time per token, custom all-reduce
serve-curve-nofit = does not fit in memory
serve-shipped = Use the shipped trained model
serve-shipped-hint = tplab ships the tiny model trained once (300 steps on the guide, one KV head per head). Untick it, or turn on grouped-query attention, to train a fresh model for the given number of steps first (0: random weights).
serve-temperature = Temperature
serve-temperature-hint = 0 decodes greedily: every step takes the most likely next character. Above 0 each step draws the next character from the model's probabilities (sharper below 1, flatter above), with the same seeded random number at every TP and in the reference, so the columns stay comparable.
serve-greedy-note = Greedy decoding: every step takes the most likely next character. A model this small soon reaches a phrase whose likeliest continuation leads back to itself, so the text repeats; it is the same at every TP because the three columns compute the same logits. Set a temperature above 0 to sample instead.
serve-sampled-note = Sampled at temperature { $temperature }: each step draws the next character from the model's probabilities with the same seeded random number at every TP and in the reference, so the three columns must still agree.
serve-pub-title = A published measurement beside the model
serve-pub-intro = Pick a published run of tensor-parallel inference: tplab predicts it with the same cost model, in the engine's settings (no CUDA graphs, NCCL's all-reduces), and shows the measured time beside its prediction. The run preselected is the one nearest to the scenario above: a 70B model on 4 GPUs.
serve-pub-pick = Published run
serve-pub-nearest = Nearest to the scenario
serve-pub-row = { $model }, { $gpus } × { $gpu }, { $layout }, batch { $batch }, { $tokens }
serve-pub-layout-tp = TP { $tp }
serve-pub-layout-pp = TP { $tp } × PP { $pp }
serve-pub-tokens-request = { $prompt } in, { $output } out
serve-pub-tokens-first = { $prompt } in, first token
serve-pub-source-ft = Source: NVIDIA FasterTransformer, GPT guide, Performance (A100 80GB SuperPod: 8 GPUs a node on NVSwitch, 8 × 200 Gb/s InfiniBand between nodes; FP16, no CUDA graphs).
serve-pub-source-nemo = Source: NVIDIA NeMo Framework user guide, Llama-2 inference performance (TensorRT-LLM, chatbot conversation, average request latency).
serve-pub-source-trt = Source: NVIDIA TensorRT-LLM performance page, version 0.5 data, low latency, A100 FP16.
serve-pub-measure-request = Measured: a whole request, the prefill of { $prompt } prompt tokens, then { $steps } decode steps.
serve-pub-measure-first = Measured: the time to first token, the prefill of { $prompt } prompt tokens.
serve-pub-tokens-step = { $prompt } in, { $output } out, one decode step
serve-pub-source-url = Source: the address beside the row in docs/calibration.md (FP8 serving).
serve-pub-measure-step = Measured: one decode step (the time per output token) at about { $context } tokens of context.
serve-pub-measured = measured
serve-pub-predicted = tplab predicts
serve-pub-error = error
serve-pub-ms = { $ms } ms
serve-pub-percent = { $error } %
serve-pub-split = Per decode step, tplab's parts: weights { $weights } ms, KV cache { $kv } ms, all-reduces { $allreduce } ms, fixed costs { $fixed } ms; in all { $step } ms.
serve-pub-split-pp = Per decode step, tplab's parts summed over the { $pp } pipeline stages a token passes in turn: weights { $weights } ms, KV cache { $kv } ms, all-reduces { $allreduce } ms, fixed costs { $fixed } ms, sends between stages { $sends } ms; in all { $step } ms.
serve-pub-fitted = This run fixed the model's fixed costs per layer and per step without CUDA graphs: it is not an independent check.
serve-pub-held-out = Held out: nothing in the model was fitted on this run.
serve-pub-summary = Over the { $n } held-out runs: { $within } within ±25 %, mean absolute error { $mae } %.
## Walkthrough narration: one sentence per step of the block program. $mode is one (a single
## GPU), sp (sequence parallelism) or plain; $tp the GPUs; $group the GPUs of one KV copy group.
walk-one-gpu = One GPU: nothing to combine, no communication.
walk-ln1 = { $mode ->
    [sp] Each GPU normalises only its own tokens of the layer input X with LayerNorm 1 (sequence parallelism), so H1 is split by tokens.
   *[other] Each GPU normalises the whole layer input X with LayerNorm 1; every GPU holds the same weights, so all get the same H1.
}
walk-attn-f = { $mode ->
    [one] One GPU: f has nothing to do.
    [sp] f is an all-gather here: each GPU sends its tokens of H1, and every GPU ends with the whole H1.
   *[other] f is the identity in the forward pass: every GPU already holds the whole H1, so nothing moves.
}
walk-attn-qkv = { $mode ->
    [one] The GPU multiplies H1 by the whole W_qkv and gets Q, K and V for every head.
   *[other] Each GPU multiplies the whole H1 by its columns of W_qkv (the Q, K and V columns of its own heads) and gets its heads' Q, K and V: column-parallel, no communication.
}
walk-attn-core = { $mode ->
    [one] The GPU runs attention on every head.
   *[other] Each GPU runs attention on its own heads only: heads are independent, so no GPU needs another's.
}
walk-attn-out = { $mode ->
    [one] The GPU multiplies the attention output by W_out; Z is complete.
   *[other] Each GPU multiplies its heads' attention output by its rows of W_out: Z has the full shape but is only a partial sum.
}
walk-attn-g = { $mode ->
    [one] One GPU: Z is already complete, so g has nothing to add.
    [sp] g is a reduce-scatter: the { $tp } GPUs add their partial sums of Z, and each keeps the sum for its own tokens.
   *[other] g is an all-reduce: the { $tp } GPUs add their partial sums of Z, and every GPU ends with the whole Z.
}
walk-attn-bias_residual = { $mode ->
    [sp] Each GPU adds the output bias (once, after the sum) and the residual to its own tokens: X1 = X + Z + b.
   *[other] Each GPU adds the output bias (once, after the sum) and the residual: X1 = X + Z + b.
}
walk-ln2 = { $mode ->
    [sp] Each GPU normalises its own tokens of X1 with LayerNorm 2, so H2 is split by tokens.
   *[other] Each GPU normalises the whole X1 with LayerNorm 2 and gets the same H2.
}
walk-mlp-f = { $mode ->
    [one] One GPU: f has nothing to do.
    [sp] f is an all-gather: each GPU sends its tokens of H2, and every GPU ends with the whole H2.
   *[other] f is the identity in the forward pass: every GPU already holds the whole H2.
}
walk-mlp-fc1 = { $mode ->
    [one] The GPU multiplies H2 by the whole W1.
   *[other] Each GPU multiplies the whole H2 by its columns of W1 and gets its columns of A: column-parallel, so GeLU can run locally next.
}
walk-mlp-gelu = { $mode ->
    [one] The GPU applies GeLU to A.
   *[other] Each GPU applies GeLU to its own columns of A: it works element by element, so no communication is needed.
}
walk-mlp-fc2 = { $mode ->
    [one] The GPU multiplies U by the whole W2; M is complete.
   *[other] Each GPU multiplies its columns of U by its rows of W2: M has the full shape but is only a partial sum.
}
walk-mlp-g = { $mode ->
    [one] One GPU: M is already complete, so g has nothing to add.
    [sp] g is a reduce-scatter: the { $tp } GPUs add their partial sums of M, and each keeps the sum for its own tokens.
   *[other] g is an all-reduce: the { $tp } GPUs add their partial sums of M, and every GPU ends with the whole M.
}
walk-mlp-bias_residual = Each GPU adds the fc2 bias and the residual: Y = X1 + M + b is the layer's output.
walk-mlp-bias_residual-bwd = { $mode ->
    [sp] The backward pass starts from dY: each GPU sums its own tokens of dY for the fc2 bias gradient (a partial sum, added up at the end of the layer).
   *[other] The backward pass starts from dY: each GPU sums dY over the tokens for the fc2 bias gradient; the residual passes dY straight through.
}
walk-mlp-g-bwd = { $mode ->
    [one] One GPU: g has nothing to do.
    [sp] Backward, g is an all-gather: the GPUs share their tokens of dY so that every GPU holds the whole dY.
   *[other] Backward, g is the identity: every GPU already holds the whole dY.
}
walk-mlp-fc2-bwd = Each GPU computes the gradient of its rows of W2 and the gradient dU of its own columns of U.
walk-mlp-gelu-bwd = Each GPU multiplies dU by the derivative of GeLU on its own columns: dA.
walk-mlp-f-bwd-gather = Sequence parallelism kept only each GPU's tokens of H2: an all-gather brings the whole H2 back for the gradient of W1.
walk-mlp-fc1-bwd = { $mode ->
    [one] The GPU computes the gradients of W1 and b1, and dH2.
   *[other] Each GPU computes the gradients of its columns of W1 and b1, and its partial sum of dH2: every GPU's columns contribute to every input.
}
walk-mlp-f-bwd = { $mode ->
    [one] One GPU: dH2 is already complete, so f has nothing to add.
    [sp] Backward, f is a reduce-scatter: the GPUs add their partial sums of dH2, and each keeps its own tokens' part.
   *[other] Backward, f is an all-reduce: the { $tp } GPUs add their partial sums of dH2, and every GPU ends with the whole gradient.
}
walk-ln2-bwd = Each GPU runs LayerNorm 2 backward and adds the residual's gradient: dX1 = dY + the LayerNorm 2 gradient.
walk-attn-bias_residual-bwd = Each GPU sums dX1 over its tokens for the gradient of the output-projection bias.
walk-attn-g-bwd = { $mode ->
    [one] One GPU: g has nothing to do.
    [sp] Backward, g is an all-gather: the GPUs share their tokens of dX1 so that every GPU holds the whole dX1.
   *[other] Backward, g is the identity: every GPU already holds the whole dX1.
}
walk-attn-out-bwd = Each GPU computes the gradient of its rows of W_out and the gradient of its own heads' attention output.
walk-attn-core-bwd = Each GPU runs attention backward on its own heads and gets their dQ, dK and dV.
walk-attn-f-bwd-gather = Sequence parallelism kept only each GPU's tokens of H1: an all-gather brings the whole H1 back for the gradient of W_qkv.
walk-attn-qkv-bwd = { $mode ->
    [one] The GPU computes the gradients of W_qkv and b_qkv, and dH1.
   *[other] Each GPU computes the gradients of its Q, K and V columns of W_qkv and b_qkv, and its partial sum of dH1.
}
walk-attn-kv-grads = GPUs { $group } hold copies of the same KV head, and each computed only part of its gradient: they all-reduce it among themselves.
walk-attn-f-bwd = { $mode ->
    [one] One GPU: dH1 is already complete, so f has nothing to add.
    [sp] Backward, f is a reduce-scatter: the GPUs add their partial sums of dH1, and each keeps its own tokens' part.
   *[other] Backward, f is an all-reduce: the { $tp } GPUs add their partial sums of dH1, and every GPU ends with the whole gradient.
}
walk-ln1-bwd = Each GPU runs LayerNorm 1 backward and adds the residual's gradient: dX = dX1 + the LayerNorm 1 gradient, which goes to the layer below.
walk-sp-grads = With sequence parallelism each GPU saw only its tokens, so its LayerNorm and bias gradients are partial sums: one small all-reduce adds them.
walk-plan-compute = { $op }: each GPU reads { $reads } and writes { $writes }.
walk-plan-collective = { $kind } over { $tp } GPUs: { $tensor } goes from { $from } to { $to }; each GPU sends { $bytes }.
walk-plan-identity = { $tensor } stays as every GPU holds it ({ $from }): this is the identity, the other half of an all-reduce in the { $other } pass. Nothing moves between GPUs.
walk-plan-slice = Each GPU keeps its slice of { $tensor } ({ $from } to { $to }): nothing moves between GPUs.
walk-placement-whole = whole copy
walk-placement-rows = its rows
walk-placement-cols = its columns
walk-placement-tokens = its tokens
walk-placement-partial = partial sum
walk-step = Step { $n }/{ $total } · layer { $layer } · { $pass }
walk-forward = forward
walk-backward = backward
walk-reads = reads
walk-writes = writes
walk-gpu = GPU { $r }
walk-round = round { $k } of { $rounds } (one press each)
walk-numbers = Numbers: show the values on a tiny layer
walk-numbers-switch = Use the numbers layer (4 tokens, hidden 8, 2 heads, TP 2)
walk-numbers-at = Values are shown at the all-reduces, where the partial sums add up (g forward, f backward).
walk-numbers-sum = the sum (every GPU)
walk-numbers-reference = the unsharded reference
walk-numbers-match = The sum equals the reference to { $error } relative (tolerance { $tolerance }): the partial sums add up.
walk-numbers-mismatch = The sum differs from the reference by { $error } relative (tolerance { $tolerance }): a bug.

## The first screen.
welcome-title = Welcome to tplab
welcome-intro = A lab for tensor parallelism: how one layer is split over several GPUs, and why.
welcome-lesson = Start with lesson 1
welcome-walk = Walk through a layer, step by step
welcome-quiz = Take the quiz
welcome-skip = or open the Playground
restore-notice = Some saved settings were out of range and were reset to defaults: { $list }.
restore-scenario = scenario
restore-range = { $what }: { $field } = { $value } is outside { $min }..={ $max }
restore-unreadable = { $what }: unreadable ({ $error })
restore-ok = OK

# --- First-hour fixes (issue 22, item 7) ---
quiz-right-choice = the right answer
quiz-your-choice = your answer
exam-confirm = { $count ->
    [one] 1 question is unanswered (it counts as wrong). Submit anyway?
   *[other] { $count } questions are unanswered (they count as wrong). Submit anyway?
}
exam-confirm-submit = Submit anyway
exam-confirm-back = Keep answering
lesson-link = Lesson { $n }: { $title }
lesson-previous = ◀ Previous lesson
lesson-next = Next lesson: { $title } ▶
lesson-copy-link = Copy a link to this lesson
lesson-copy-link-hint = Copies { $link }: it opens this lesson (give it to a class).
lesson-previous-short = ◀ Previous
lesson-next-short = Next ▶
lesson-copy-link-short = Copy link
walk-numbers-round = GPU { $r } after round { $k } of { $rounds }
walk-numbers-round-key = Each chunk (a quarter, a half… of the numbers, row by row) is the sum of the partial sums that GPU holds so far; bold: everyone's, the whole sum; ·: nothing of it yet.
