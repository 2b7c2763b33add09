# cli strings (tr). Keep the ids identical in en/ and tr/.

## tplab quiz (the terminal quiz)
cli-quiz-name-prompt = Sertifika için adınız:
cli-quiz-score = Puan: { $correct }/{ $total } (%{ $percent })
cli-quiz-end-of-input = (giriş bitti: duruluyor)
cli-quiz-correct = ✔ Doğru!
cli-quiz-wrong = ✘ Tam değil. Doğru cevap: { $expected }
cli-quiz-show-me = Uygulamada göster: { $target }
cli-quiz-exam-header = Sınav { $version } — { $total } soru, geçme notu %{ $pass }. Cevaplar son sorudan sonra değerlendirilir.
cli-quiz-exam-unfinished = Sınav bitirilmedi, bu yüzden puanlanmadı. `tplab quiz --exam` komutunu yeniden çalıştırın (yeni oturum yeni sorular çeker).
cli-quiz-review = — Değerlendirme —
cli-quiz-revisit = — Tekrar çalışılacak konular — (geçilemeyen bir oturumun değerlendirmesi cevapları göstermez; alıştırma testi, `tplab quiz`, her cevabı açıklar ve yeniden giriş yeni sayılarla yeni sorular çeker)
cli-quiz-revisit-lesson = { $asked } sorudan { $missed } tanesi yanlış ya da boş: { $title } (`tplab lessons show { $slug }`)
cli-quiz-revisit-other = { $asked } sorudan { $missed } tanesi yanlış ya da boş: genel sorular
cli-quiz-not-passed = Henüz geçmediniz; geçme notu %{ $pass }. Yeniden girişte yeni sorular çekilir.
cli-quiz-signed = İmzalayan anahtar { $fingerprint } ({ $path })
cli-quiz-unsigned = İmzasız: yapılandırılmış bir veren anahtarı yok (bkz. `tplab cert keygen`); bu sertifikayı herkes yazabilirdi.
cli-quiz-passed = Geçtiniz! Sertifika kimliği { $id }
cli-quiz-verify-hint = Herkes şu komutla doğrulayabilir: tplab cert verify DOSYA --issuer ANAHTAR
cli-quiz-hint-single = (bir harf)
cli-quiz-hint-multiple = (doğru olan her harf, örn. A, C)
cli-quiz-hint-numeric = (bir sayı{ $unit }; { $format })
cli-quiz-hint-ordering = (tüm harfler doğru sırada, örn. C A B)
