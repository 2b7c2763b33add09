# tplab UI strings, English. Every id here must exist in tr.ftl too (a test checks).
language = Language
lessons-title = Lessons
lessons-invalid = The built-in lessons have problems:
lesson-position = Lesson { $n } of { $total }
show-me = Show me
show-me-hint = Opens { $target }
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
serve-scenario-title = The guide's scenario: a 70B chat model with tensor_parallel_size=4
serve-scenario-tp4 = Llama-3 70B on 4 × { $gpu }, one sequence with { $context } tokens of context: { $ms } ms per token ({ $tps } tokens/s). Reading each GPU's quarter of the weights takes { $weights } ms; the { $count } all-reduces take { $allreduce } ms. Memory per GPU: { $memory }.
serve-scenario-knee = From TP = { $tp } on, doubling the GPUs saves less than 10%: the weight reads keep halving, but the all-reduces' latency does not, and TP = 16 crosses the node boundary onto InfiniBand.
serve-axis-tp = GPUs (TP)
serve-axis-ms-token = ms per token (model)
serve-curve-total = time per token
serve-curve-reads = HBM reads (weights + KV cache)
serve-curve-nofit = does not fit in memory
serve-shipped = Use the shipped trained model
serve-shipped-hint = tplab ships the tiny model trained once (300 steps on the guide, one KV head per head). Untick it, or turn on grouped-query attention, to train a fresh model for the given number of steps first (0: random weights).
