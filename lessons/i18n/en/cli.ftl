# cli strings (en). Keep the ids identical in en/ and tr/.

## tplab quiz (the terminal quiz)
cli-quiz-name-prompt = Your name for the certificate:
cli-quiz-score = Score: { $correct }/{ $total } ({ $percent }%)
cli-quiz-end-of-input = (end of input: stopping)
cli-quiz-correct = ✔ Correct!
cli-quiz-wrong = ✘ Not quite. The answer is: { $expected }
cli-quiz-show-me = Show me in the app: { $target }
cli-quiz-exam-header = Exam { $version } — { $total } questions, pass mark { $pass }%. Answers are marked after the last question.
cli-quiz-exam-unfinished = The exam was not finished, so it is not scored. Run `tplab quiz --exam` again (a new sitting draws new questions).
cli-quiz-review = — Review —
cli-quiz-revisit = — Topics to revisit — (the review of a failed sitting shows no answers; the practice quiz, `tplab quiz`, explains every answer, and a retake draws new questions with new numbers)
cli-quiz-revisit-lesson = { $missed } of { $asked } missed: { $title } (`tplab lessons show { $slug }`)
cli-quiz-revisit-other = { $missed } of { $asked } missed: general questions
cli-quiz-not-passed = Not passed yet; the pass mark is { $pass }%. A retake draws new questions.
cli-quiz-signed = Signed by issuer key { $fingerprint } ({ $path })
cli-quiz-unsigned = Unsigned: no issuer key is configured (see `tplab cert keygen`), so anyone could have written this certificate.
cli-quiz-passed = Passed! Certificate ID { $id }
cli-quiz-verify-hint = Anyone can check it with: tplab cert verify FILE --issuer KEY
cli-quiz-hint-single = (one letter)
cli-quiz-hint-multiple = (every right letter, e.g. A, C)
cli-quiz-hint-numeric = (a number{ $unit }; { $format })
cli-quiz-hint-ordering = (all letters in the right order, e.g. C A B)
