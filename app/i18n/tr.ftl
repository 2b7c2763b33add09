# tplab arayüz metinleri, Türkçe. Buradaki her kimlik en.ftl'de de bulunmalıdır (bir test denetler).
language = Dil
lessons-title = Dersler
lessons-invalid = Yerleşik derslerde sorunlar var:
lesson-position = Ders { $n } / { $total }
show-me = Göster
show-me-hint = { $target } açılır
quiz-title = Kısa sınav
quiz-question-position = Soru { $n } / { $total }
quiz-check = Cevabı kontrol et
quiz-next = Sonraki soru
quiz-new-set = Yeni sorular
quiz-correct = Doğru!
quiz-wrong = Tam değil. Doğru cevap: { $answer }
quiz-score = Puan: { $correct }/{ $answered }
quiz-number = Cevabınız (bir sayı)
quiz-unit = Birim: { $unit }
quiz-order-hint = Öğeleri doğru sırayla tıklayın:
quiz-order-chosen = Sıralamanız:
quiz-order-reset = Baştan başla
quiz-single-hint = Bir cevap seçin.
quiz-multiple-hint = Doğru olan her cevabı seçin.
quiz-why = Neden:
quiz-done = Tüm soruları cevapladınız. Yeni bir set için "Yeni sorular"a basın.
quiz-invalid = Soru bankalarında sorunlar var:

# --- Exam and certificates in the Quiz view (issue 12) ---
quiz-mode-practice = Alıştırma
quiz-mode-exam = Sertifika sınavı
quiz-enter-hint = Enter cevabı kontrol eder, sonra sonraki soruya geçer.
exam-title = Sertifika sınavı
exam-intro = { $pool } soruluk bir havuzdan { $length } soru; her oturum yenilerini çeker. Gönderene kadar hiçbir cevap değerlendirilmez. Geçme notu: %{ $pass }.
exam-name = Adınız (sertifikada böyle görünecek):
exam-start = Sınava başla
exam-signed-by = Sertifikalar { $fingerprint } anahtarıyla imzalanır.
exam-unsigned = Veren anahtarı kurulmamış, bu yüzden sertifikalar imzasız olacak (herkes yazabilir). Öğretmen bir anahtarı şu komutla oluşturur: tplab cert keygen
exam-issuer-error = Veren anahtarı kullanılamıyor: { $error }
exam-store-error = İlerleme kaydedilemiyor, bu yüzden sınav başlayamaz: { $error }
exam-position = Soru { $n } / { $total } · { $answered } cevaplandı
exam-previous = Önceki
exam-next = Sonraki
exam-submit = Sınavı gönder
exam-enter-hint = Enter cevabı kaydedip ilerler; son soruda sınavı gönderir.
exam-unanswered = { $count } soru cevapsız (yanlış sayılır)
exam-passed = Geçtiniz: { $total } sorudan { $correct } doğru (%{ $percent })
exam-failed = Geçemediniz: { $total } sorudan { $correct } doğru (%{ $percent }); geçme notu %{ $pass }.
exam-saved = Sonuç ilerlemenize kaydedildi (oturum tohumu { $seed }).
exam-save-failed = Sonuç kaydedilemedi, bu yüzden sertifika yazılmadı: { $error }
exam-cert-saved = Sertifika kaydedildi: { $png }
exam-cert-failed = Geçtiğiniz ilerlemenize kaydedildi, ama sertifika yazılamadı: { $error }
exam-cert-signed = { $fingerprint } anahtarıyla imzalı: herkes tplab cert verify DOSYA --issuer ANAHTAR ile doğrulayabilir.
exam-cert-unsigned = İmzasız: sertifika tutarlı, ama herkes yazmış olabilir.
exam-cert-proves = İmzalı bir sertifika, bu kaydı veren anahtarın sahibinin verdiğini ve kaydın değişmediğini kanıtlar; adı kimin yazdığını ya da sınava kimin girdiğini kanıtlamaz.
exam-review = Değerlendirme
exam-right = Doğru
exam-wrong = Yanlış; doğru cevap: { $answer }
exam-not-answered = Cevaplanmadı; doğru cevap: { $answer }
exam-retake = Yeni oturum (yeni sorular)

## --- Serve görünümü (yardımcı S, konu 15) ---
serve-title = Sunum: tek istem, TP 1, 2 ve 4 ile yanıtlanıyor
serve-intro = Rehber üzerinde eğitilmiş küçük karakter düzeyli model sanal GPU'larda yanıt verir: önce istemin ön doldurması, sonra her seferinde bir belirteç. Her GPU kendi KV başlarının KV önbelleğini tutar ve her belirteç katman başına iki all-reduce öder. Üç sütun, bölünmemiş referansla aynı metni üretmelidir.
serve-prompt = İstem
serve-tokens = Belirteç
serve-train-steps = Eğitim adımı
serve-gqa = Gruplanmış sorgu dikkati (2 KV başı)
serve-gqa-hint = 4 sorgu başı 2 KV başını paylaşır. TP=2'de her GPU bir KV başını önbelleğe alır; TP=4'te her KV başı iki GPU'da tutulur, bu yüzden GPU başına önbellek küçülmeyi bırakır.
serve-generate = Üret
serve-training = Küçük model rehber üzerinde eğitiliyor…
serve-decoding = Kod çözülüyor…
serve-failed = İstek başarısız oldu: { $error }
serve-reference = Bölünmemiş referans: { $text }
serve-column = TP = { $tp }
serve-token-time = Belirteç başına: hesaplama { $compute } ms, kolektifler { $collective } ms (bu bilgisayarda ölçüldü)
serve-kv = GPU başına KV önbelleği: { $bytes } ({ $context } konumun { $tokens } tanesi)
serve-compute = hesaplama
serve-collectives = kolektifler
serve-axis-token = belirteç
serve-axis-ms = ms
serve-check-pass = Referansla aynı metin: { $same }; en büyük logit farkı { $error } (izin verilen { $tolerance })
serve-check-fail = Referanstan farklı! Aynı metin: { $same }; en büyük logit farkı { $error } (izin verilen { $tolerance })
serve-yes = evet
serve-no = hayır
serve-measured-note = Sanal GPU'lar bu bilgisayarın işlemcisini paylaşır; süreleri bir GPU'nun hızını değil, işin sırasını gösterir. Aşağıdaki eğri gerçek GPU'lar için maliyet modelidir.
serve-scenario-title = Rehberin senaryosu: tensor_parallel_size=4 ile 70B sohbet modeli
serve-scenario-tp4 = 4 × { $gpu } üzerinde Llama-3 70B, { $context } belirteçlik bağlamı olan tek dizi: belirteç başına { $ms } ms (saniyede { $tps } belirteç). Her GPU'nun ağırlıkların dörtte birini okuması { $weights } ms sürer; { $count } all-reduce { $allreduce } ms sürer. GPU başına bellek: { $memory }.
serve-scenario-knee = TP = { $tp } değerinden sonra GPU sayısını ikiye katlamak %10'dan az kazandırır: ağırlık okumaları yarılanmaya devam eder ama all-reduce gecikmesi azalmaz; TP = 16 ise düğüm sınırını aşıp InfiniBand'e geçer.
serve-axis-tp = GPU sayısı (TP)
serve-axis-ms-token = belirteç başına ms (model)
serve-curve-total = belirteç başına süre
serve-curve-reads = HBM okumaları (ağırlıklar + KV önbelleği)
serve-curve-nofit = belleğe sığmıyor
serve-shipped = Hazır eğitilmiş modeli kullan
serve-shipped-hint = tplab, bir kez eğitilmiş küçük modelle gelir (rehber üzerinde 300 adım, her başa bir KV başı). Önce verilen adım sayısı kadar yeni bir model eğitmek için işareti kaldırın ya da gruplanmış sorgu dikkatini açın (0: rastgele ağırlıklar).
