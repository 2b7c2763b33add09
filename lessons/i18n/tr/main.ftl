# tplab arayüz metinleri, Türkçe. Buradaki her kimlik en.ftl'de de bulunmalıdır (bir test denetler).
language = Dil
lessons-title = Dersler
lessons-invalid = Yerleşik derslerde sorunlar var:
lesson-position = Ders { $n } / { $total }
show-me = Göster
show-me-hint = { $target } açılır
show-me-menu = Uygulamada göster ({ $n }) ⏷
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
exam-revisit = Tekrar çalışılacak konular
exam-revisit-why = Geçilemeyen bir oturum cevapları göstermez: bu dersleri çalışın, alıştırmalarda pratik yapın (her cevap açıklanır), sonra yeni bir oturuma girin (yeni sorular, yeni sayılar).
exam-revisit-lesson = { $title } — { $asked } sorudan { $missed } tanesi yanlış ya da boş
exam-revisit-other = Genel sorular — { $asked } sorudan { $missed } tanesi yanlış ya da boş
exam-review = Değerlendirme
exam-right = Doğru
exam-wrong = Yanlış; doğru cevap: { $answer }
exam-not-answered = Cevaplanmadı; doğru cevap: { $answer }
exam-retake = Yeni oturum (yeni sorular)

## --- Serve görünümü (yardımcı S, konu 15) ---
serve-title = Çıkarım: tek istem, TP 1, 2 ve 4 ile yanıtlanıyor
serve-intro = Rehber üzerinde eğitilmiş küçük karakter düzeyli model sanal GPU'larda yanıt verir: önce istemin ön doldurması, sonra her seferinde bir token. Her GPU kendi KV kafalarının KV önbelleğini tutar ve her token katman başına iki all-reduce öder. Üç sütun, bölünmemiş referansla aynı metni üretmelidir.
serve-prompt = İstem
serve-tokens = Token
serve-train-steps = Eğitim adımı
serve-gqa = Gruplanmış sorgu dikkati (2 KV kafası)
serve-gqa-hint = 4 sorgu kafası 2 KV kafasını paylaşır. TP=2'de her GPU bir KV kafasını önbelleğe alır; TP=4'te her KV kafası iki GPU'da tutulur, bu yüzden GPU başına önbellek küçülmeyi bırakır.
serve-generate = Üret
serve-training = Küçük model rehber üzerinde eğitiliyor…
serve-decoding = Token'lar üretiliyor…
serve-failed = İstek başarısız oldu: { $error }
serve-reference = Bölünmemiş referans: { $text }
serve-column = TP = { $tp }
serve-token-time = Token başına: hesaplama { $compute } ms, kolektifler { $collective } ms (bu bilgisayarda ölçüldü)
serve-kv = GPU başına KV önbelleği: { $bytes } ({ $context } konumun { $tokens } tanesi)
serve-compute = hesaplama
serve-collectives = kolektifler
serve-axis-token = token
serve-axis-ms = ms
serve-check-pass = Referansla aynı metin: { $same }; en büyük logit farkı { $error } (izin verilen { $tolerance })
serve-check-fail = Referanstan farklı! Aynı metin: { $same }; en büyük logit farkı { $error } (izin verilen { $tolerance })
serve-yes = evet
serve-no = hayır
serve-measured-note = Sanal GPU'lar bu bilgisayarın işlemcisini paylaşır; süreleri bir GPU'nun hızını değil, işin sırasını gösterir. Aşağıdaki eğri gerçek GPU'lar için maliyet modelidir.
serve-scenario-title = Rehberin senaryosu: 4 GPU'da çalışan 70B sohbet modeli (vLLM'de tensör paralel boyutu 4)
serve-scenario-tp4 = 4 × { $gpu } üzerinde Llama-3 70B, { $context } token'lık bağlamı olan tek dizi, CUDA graph'larıyla: NCCL all-reduce'larıyla token başına { $ms } ms (saniyede { $tps } token), özel one-shot all-reduce ile (vLLM, TensorRT-LLM) { $ms_custom } ms. Token başına: her GPU ağırlıkların dörtte birini { $weights } ms'de, KV önbelleğindeki payını { $kv } ms'de okur; { $count } all-reduce (katman başına iki ve gömmeninki) NCCL ile { $allreduce } ms (her biri { $one } µs), özel çekirdekle { $allreduce_custom } ms sürer; sabit maliyetler (çekirdek başlatmaları, örnekleme) { $fixed } ms. GPU başına bellek: { $memory }.
serve-scenario-knee = TP = { $tp } değerinden sonra GPU sayısını ikiye katlamak %10'dan az kazandırır: ağırlık okumaları yarılanmaya devam eder ama all-reduce gecikmesi azalmaz; TP = 16 ise düğüm sınırını aşıp InfiniBand'e geçer.
serve-axis-tp = GPU sayısı (TP)
serve-token-table = Çubuklar sayılarla (token başına ms)
serve-curve-table = Eğriler sayılarla (TP başına, token başına ms)
serve-curve-fits = belleğe sığar
serve-axis-ms-token = token başına ms (model)
serve-curve-total = token başına süre
serve-curve-reads = HBM okumaları (ağırlıklar + KV önbelleği)
serve-curve-custom = token başına süre, özel all-reduce
serve-curve-nofit = belleğe sığmıyor
serve-shipped = Hazır eğitilmiş modeli kullan
serve-shipped-hint = tplab, bir kez eğitilmiş küçük modelle gelir (rehber üzerinde 300 adım, her kafaya bir KV kafası). Önce verilen adım sayısı kadar yeni bir model eğitmek için işareti kaldırın ya da gruplanmış sorgu dikkatini açın (0: rastgele ağırlıklar).
serve-temperature = Sıcaklık
serve-temperature-hint = 0 açgözlü üretim yapar: her adım en olası sonraki karakteri seçer. 0'ın üstünde her adım sonraki karakteri modelin olasılıklarından çeker (1'in altında daha keskin, üstünde daha düz); her TP'de ve referansta aynı tohumlu rastgele sayı kullanılır, böylece sütunlar karşılaştırılabilir kalır.
serve-greedy-note = Açgözlü üretim (greedy decoding): her adım en olası sonraki karakteri seçer. Bu kadar küçük bir model kısa sürede en olası devamı kendisine geri dönen bir ifadeye ulaşır, bu yüzden metin tekrar eder; üç sütun aynı logit'leri hesapladığı için tekrar her TP'de aynıdır. Bunun yerine örnekleme yapmak için sıcaklığı 0'ın üstüne çıkarın.
serve-sampled-note = { $temperature } sıcaklıkta örneklendi: her adım sonraki karakteri modelin olasılıklarından, her TP'de ve referansta aynı tohumlu rastgele sayıyla çeker; bu yüzden üç sütun yine aynı sonucu vermelidir.
serve-pub-title = Modelin yanında yayımlanmış bir ölçüm
serve-pub-intro = Tensör paralel çıkarımın yayımlanmış bir çalıştırmasını seçin: tplab onu aynı maliyet modeliyle, motorun ayarlarında (CUDA graph'ı yok, NCCL all-reduce'ları) tahmin eder ve ölçülen süreyi tahmininin yanında gösterir. Önceden seçili çalıştırma yukarıdaki senaryoya en yakın olanıdır: 4 GPU'da 70B bir model.
serve-pub-pick = Yayımlanmış çalıştırma
serve-pub-nearest = Senaryoya en yakın olan
serve-pub-row = { $model }, { $gpus } × { $gpu }, { $layout }, parti { $batch }, { $tokens }
serve-pub-layout-tp = TP { $tp }
serve-pub-layout-pp = TP { $tp } × PP { $pp }
serve-pub-tokens-request = { $prompt } giriş, { $output } çıktı
serve-pub-tokens-first = { $prompt } giriş, ilk token
serve-pub-source-ft = Kaynak: NVIDIA FasterTransformer, GPT kılavuzu, Performans (A100 80GB SuperPod: düğüm başına NVSwitch üzerinde 8 GPU, düğümler arasında 8 × 200 Gb/s InfiniBand; FP16, CUDA graph'ı yok).
serve-pub-source-nemo = Kaynak: NVIDIA NeMo Framework kullanıcı kılavuzu, Llama-2 çıkarım performansı (TensorRT-LLM, sohbet konuşması, ortalama istek gecikmesi).
serve-pub-source-trt = Kaynak: NVIDIA TensorRT-LLM performans sayfası, 0.5 sürümü verileri, düşük gecikme, A100 FP16.
serve-pub-measure-request = Ölçülen: bütün bir istek, { $prompt } istem token'ının ön doldurması, ardından { $steps } token üretimi adımı.
serve-pub-measure-first = Ölçülen: ilk token'a kadar geçen süre, { $prompt } istem token'ının ön doldurması.
serve-pub-tokens-step = { $prompt } giriş, { $output } çıktı, bir token üretimi adımı
serve-pub-source-url = Kaynak: docs/calibration.md içinde satırın yanındaki adres (FP8 ile çıkarım).
serve-pub-measure-step = Ölçülen: yaklaşık { $context } token bağlamda bir token üretimi adımı (çıktı token'ı başına süre).
serve-pub-measured = ölçülen
serve-pub-predicted = tplab'in tahmini
serve-pub-error = hata
serve-pub-ms = { $ms } ms
serve-pub-percent = %{ $error }
serve-pub-split = Token üretimi adımı başına tplab'in parçaları: ağırlıklar { $weights } ms, KV önbelleği { $kv } ms, all-reduce'lar { $allreduce } ms, sabit maliyetler { $fixed } ms; toplam { $step } ms.
serve-pub-split-pp = Token üretimi adımı başına tplab'in parçaları, bir token'ın sırayla geçtiği { $pp } ardışık düzen aşamasının toplamı: ağırlıklar { $weights } ms, KV önbelleği { $kv } ms, all-reduce'lar { $allreduce } ms, sabit maliyetler { $fixed } ms, aşamalar arası gönderimler { $sends } ms; toplam { $step } ms.
serve-pub-fitted = Bu çalıştırma, modelin CUDA graph'sız katman ve adım başına sabit maliyetlerini belirledi: bağımsız bir kontrol değildir.
serve-pub-held-out = Ayrılmış: modelde hiçbir şey bu çalıştırmaya göre ayarlanmadı.
serve-pub-summary = Ayrılmış { $n } çalıştırmada: { $within } tanesi ±%25 içinde, ortalama mutlak hata %{ $mae }.
## Adım adım anlatım: blok programının her adımı için bir cümle. $mode: one (tek GPU), sp
## (dizi paralelliği) ya da plain; $tp GPU sayısı; $group bir KV kopya grubunun GPU'ları.
walk-one-gpu = Tek GPU: birleştirilecek bir şey yok, iletişim yok.
walk-ln1 = { $mode ->
    [sp] Her GPU, katman girişi X'in yalnızca kendi token'larını LayerNorm 1 ile normalleştirir (dizi paralelliği); H1 token'lara göre bölünmüş olur.
   *[other] Her GPU, katman girişi X'in tamamını LayerNorm 1 ile normalleştirir; ağırlıklar her GPU'da aynı olduğundan hepsi aynı H1'i elde eder.
}
walk-attn-f = { $mode ->
    [one] Tek GPU: f'nin yapacağı bir şey yok.
    [sp] f burada bir all-gather'dır: her GPU H1'in kendi token'larını gönderir ve sonunda her GPU H1'in tamamını tutar.
   *[other] İleri geçişte f birim işlemdir: her GPU H1'in tamamını zaten tutar, hiçbir veri taşınmaz.
}
walk-attn-qkv = { $mode ->
    [one] GPU, H1'i W_qkv'nin tamamıyla çarpar ve her kafa için Q, K ve V'yi elde eder.
   *[other] Her GPU, H1'in tamamını W_qkv'nin kendi sütunlarıyla (kendi kafalarının Q, K ve V sütunları) çarpar ve kendi kafalarının Q, K ve V'sini elde eder: sütun paralel, iletişim yok.
}
walk-attn-core = { $mode ->
    [one] GPU, dikkati bütün kafalar üzerinde hesaplar.
   *[other] Her GPU dikkati yalnızca kendi kafaları üzerinde hesaplar: kafalar birbirinden bağımsızdır, hiçbir GPU'nun başkasınınkine ihtiyacı yoktur.
}
walk-attn-out = { $mode ->
    [one] GPU, dikkat çıktısını W_out ile çarpar; Z tamdır.
   *[other] Her GPU, kendi kafalarının dikkat çıktısını W_out'un kendi satırlarıyla çarpar: Z tam boyuttadır ama yalnızca bir kısmi toplamdır.
}
walk-attn-g = { $mode ->
    [one] Tek GPU: Z zaten tamdır, g'nin ekleyeceği bir şey yok.
    [sp] g bir reduce-scatter'dır: { $tp } GPU, Z'nin kısmi toplamlarını toplar ve her biri toplamın kendi token'larına düşen kısmını tutar.
   *[other] g bir all-reduce'dur: { $tp } GPU, Z'nin kısmi toplamlarını toplar ve sonunda her GPU Z'nin tamamını tutar.
}
walk-attn-bias_residual = { $mode ->
    [sp] Her GPU, çıkış projeksiyonunun bias'ını (toplamdan sonra, bir kez) ve artık bağlantıyı kendi token'larına ekler: X1 = X + Z + b.
   *[other] Her GPU, çıkış projeksiyonunun bias'ını (toplamdan sonra, bir kez) ve artık bağlantıyı ekler: X1 = X + Z + b.
}
walk-ln2 = { $mode ->
    [sp] Her GPU, X1'in kendi token'larını LayerNorm 2 ile normalleştirir; H2 token'lara göre bölünmüş olur.
   *[other] Her GPU, X1'in tamamını LayerNorm 2 ile normalleştirir ve aynı H2'yi elde eder.
}
walk-mlp-f = { $mode ->
    [one] Tek GPU: f'nin yapacağı bir şey yok.
    [sp] f bir all-gather'dır: her GPU H2'nin kendi token'larını gönderir ve sonunda her GPU H2'nin tamamını tutar.
   *[other] İleri geçişte f birim işlemdir: her GPU H2'nin tamamını zaten tutar.
}
walk-mlp-fc1 = { $mode ->
    [one] GPU, H2'yi W1'in tamamıyla çarpar.
   *[other] Her GPU, H2'nin tamamını W1'in kendi sütunlarıyla çarpar ve A'nın kendi sütunlarını elde eder: sütun paralel olduğu için GeLU ardından yerel olarak çalışabilir.
}
walk-mlp-gelu = { $mode ->
    [one] GPU, A'ya GeLU uygular.
   *[other] Her GPU, A'nın kendi sütunlarına GeLU uygular: GeLU eleman eleman çalışır, iletişim gerekmez.
}
walk-mlp-fc2 = { $mode ->
    [one] GPU, U'yu W2'nin tamamıyla çarpar; M tamdır.
   *[other] Her GPU, U'nun kendi sütunlarını W2'nin kendi satırlarıyla çarpar: M tam boyuttadır ama yalnızca bir kısmi toplamdır.
}
walk-mlp-g = { $mode ->
    [one] Tek GPU: M zaten tamdır, g'nin ekleyeceği bir şey yok.
    [sp] g bir reduce-scatter'dır: { $tp } GPU, M'nin kısmi toplamlarını toplar ve her biri toplamın kendi token'larına düşen kısmını tutar.
   *[other] g bir all-reduce'dur: { $tp } GPU, M'nin kısmi toplamlarını toplar ve sonunda her GPU M'nin tamamını tutar.
}
walk-mlp-bias_residual = Her GPU, fc2 bias'ını ve artık bağlantıyı ekler: Y = X1 + M + b katmanın çıktısıdır.
walk-mlp-bias_residual-bwd = { $mode ->
    [sp] Geri geçiş dY'den başlar: her GPU, fc2 bias gradyanı için dY'nin kendi token'larını toplar (katmanın sonunda toplanan bir kısmi toplam).
   *[other] Geri geçiş dY'den başlar: her GPU, fc2 bias gradyanı için dY'yi token'lar üzerinden toplar; artık bağlantı dY'yi olduğu gibi geçirir.
}
walk-mlp-g-bwd = { $mode ->
    [one] Tek GPU: g'nin yapacağı bir şey yok.
    [sp] Geri geçişte g bir all-gather'dır: GPU'lar dY'nin kendi token'larını paylaşır, böylece her GPU dY'nin tamamını tutar.
   *[other] Geri geçişte g birim işlemdir: her GPU dY'nin tamamını zaten tutar.
}
walk-mlp-fc2-bwd = Her GPU, W2'nin kendi satırlarının gradyanını ve U'nun kendi sütunlarının gradyanı dU'yu hesaplar.
walk-mlp-gelu-bwd = Her GPU, kendi sütunlarında dU'yu GeLU'nun türeviyle çarpar: dA.
walk-mlp-f-bwd-gather = Dizi paralelliği H2'nin her GPU'da yalnızca kendi token'larını sakladı: W1'in gradyanı için bir all-gather H2'nin tamamını geri getirir.
walk-mlp-fc1-bwd = { $mode ->
    [one] GPU, W1 ve b1'in gradyanlarını ve dH2'yi hesaplar.
   *[other] Her GPU, W1 ve b1'in kendi sütunlarının gradyanlarını ve dH2'nin kendi kısmi toplamını hesaplar: her GPU'nun sütunları her girişe katkıda bulunur.
}
walk-mlp-f-bwd = { $mode ->
    [one] Tek GPU: dH2 zaten tamdır, f'nin ekleyeceği bir şey yok.
    [sp] Geri geçişte f bir reduce-scatter'dır: GPU'lar dH2'nin kısmi toplamlarını toplar ve her biri kendi token'larının kısmını tutar.
   *[other] Geri geçişte f bir all-reduce'dur: { $tp } GPU, dH2'nin kısmi toplamlarını toplar ve sonunda her GPU gradyanın tamamını tutar.
}
walk-ln2-bwd = Her GPU, LayerNorm 2'nin geri geçişini hesaplar ve artık bağlantının gradyanını ekler: dX1 = dY + LayerNorm 2 gradyanı.
walk-attn-bias_residual-bwd = Her GPU, çıkış projeksiyonu bias'ının gradyanı için dX1'i kendi token'ları üzerinden toplar.
walk-attn-g-bwd = { $mode ->
    [one] Tek GPU: g'nin yapacağı bir şey yok.
    [sp] Geri geçişte g bir all-gather'dır: GPU'lar dX1'in kendi token'larını paylaşır, böylece her GPU dX1'in tamamını tutar.
   *[other] Geri geçişte g birim işlemdir: her GPU dX1'in tamamını zaten tutar.
}
walk-attn-out-bwd = Her GPU, W_out'un kendi satırlarının gradyanını ve kendi kafalarının dikkat çıktısının gradyanını hesaplar.
walk-attn-core-bwd = Her GPU, kendi kafaları üzerinde dikkatin geri geçişini hesaplar ve onların dQ, dK ve dV'sini elde eder.
walk-attn-f-bwd-gather = Dizi paralelliği H1'in her GPU'da yalnızca kendi token'larını sakladı: W_qkv'nin gradyanı için bir all-gather H1'in tamamını geri getirir.
walk-attn-qkv-bwd = { $mode ->
    [one] GPU, W_qkv ve b_qkv'nin gradyanlarını ve dH1'i hesaplar.
   *[other] Her GPU, W_qkv ve b_qkv'nin kendi Q, K ve V sütunlarının gradyanlarını ve dH1'in kendi kısmi toplamını hesaplar.
}
walk-attn-kv-grads = { $group } numaralı GPU'lar aynı KV kafasının kopyalarını tutar ve her biri onun gradyanının yalnızca bir kısmını hesapladı: gradyanı kendi aralarında all-reduce ile toplarlar.
walk-attn-f-bwd = { $mode ->
    [one] Tek GPU: dH1 zaten tamdır, f'nin ekleyeceği bir şey yok.
    [sp] Geri geçişte f bir reduce-scatter'dır: GPU'lar dH1'in kısmi toplamlarını toplar ve her biri kendi token'larının kısmını tutar.
   *[other] Geri geçişte f bir all-reduce'dur: { $tp } GPU, dH1'in kısmi toplamlarını toplar ve sonunda her GPU gradyanın tamamını tutar.
}
walk-ln1-bwd = Her GPU, LayerNorm 1'in geri geçişini hesaplar ve artık bağlantının gradyanını ekler: dX = dX1 + LayerNorm 1 gradyanı; bu gradyan alttaki katmana gider.
walk-sp-grads = Dizi paralelliğinde her GPU yalnızca kendi token'larını gördüğü için LayerNorm ve bias gradyanları kısmi toplamlardır: küçük bir all-reduce onları toplar.
walk-plan-compute = { $op }: her GPU { $reads } okur ve { $writes } yazar.
walk-plan-collective = { $tp } GPU üzerinde bir { $kind }: { $tensor }, { $from } durumundan { $to } durumuna geçer; her GPU { $bytes } gönderir.
walk-plan-identity = { $tensor } her GPU'da olduğu gibi kalır ({ $from }): bu birim işlemdir, { $other } içindeki all-reduce'un öbür yarısı. GPU'lar arasında hiçbir şey taşınmaz.
walk-plan-slice = Her GPU { $tensor } tensörünün kendi dilimini tutar ({ $from } yerine { $to }): GPU'lar arasında hiçbir şey taşınmaz.
walk-placement-whole = tam kopya
walk-placement-rows = kendi satırları
walk-placement-cols = kendi sütunları
walk-placement-tokens = kendi token'ları
walk-placement-partial = kısmi toplam
walk-step = Adım { $n }/{ $total } · katman { $layer } · { $pass }
walk-forward = ileri geçiş
walk-backward = geri geçiş
walk-reads = okur
walk-writes = yazar
walk-gpu = GPU { $r }
walk-round = tur { $k }/{ $rounds } (her basışta bir tur)
walk-numbers = Sayılar: küçük bir katmanda değerleri göster
walk-numbers-switch = Sayılar katmanını kullan (4 token, gizli boyut 8, 2 kafa, TP 2)
walk-numbers-at = Değerler, kısmi toplamların toplandığı all-reduce adımlarında gösterilir (ileri geçişte g, geri geçişte f).
walk-numbers-sum = toplam (her GPU'da)
walk-numbers-reference = bölünmemiş referans
walk-numbers-match = Toplam referansla { $error } göreli farkla aynı (tolerans { $tolerance }): kısmi toplamlar doğru toplanıyor.
walk-numbers-mismatch = Toplam referanstan { $error } göreli farkla ayrılıyor (tolerans { $tolerance }): bu bir hata.

## İlk ekran.
welcome-title = tplab'e hoş geldiniz
welcome-intro = Tensör paralelliği için bir laboratuvar: bir katman birkaç GPU'ya nasıl bölünür ve neden.
welcome-lesson = 1. dersle başla
welcome-walk = Bir katmanı adım adım izle
welcome-quiz = Teste başla
welcome-skip = ya da Oyun alanını aç
restore-notice = Kaydedilmiş bazı ayarlar aralık dışındaydı ve varsayılanlarına döndürüldü: { $list }.
restore-scenario = senaryo
restore-range = { $what }: { $field } = { $value }, { $min }..={ $max } aralığının dışında
restore-unreadable = { $what }: okunamadı ({ $error })
restore-ok = Tamam

# --- İlk saatin pürüzleri (konu 22, madde 7) ---
quiz-right-choice = doğru cevap
quiz-your-choice = sizin cevabınız
exam-confirm = { $count ->
    [one] 1 soru cevapsız (yanlış sayılır). Yine de gönderilsin mi?
   *[other] { $count } soru cevapsız (yanlış sayılır). Yine de gönderilsin mi?
}
exam-confirm-submit = Yine de gönder
exam-confirm-back = Cevaplamaya devam et
lesson-link = Ders { $n }: { $title }
lesson-previous = ◀ Önceki ders
lesson-next = Sonraki ders: { $title } ▶
lesson-copy-link = Bu dersin bağlantısını kopyala
lesson-copy-link-hint = { $link } kopyalanır: bu dersi açar (sınıfla paylaşın).
lesson-previous-short = ◀ Önceki
lesson-next-short = Sonraki ▶
lesson-copy-link-short = Bağlantıyı kopyala
walk-numbers-round = GPU { $r }, { $rounds } turun { $k }. turundan sonra
walk-numbers-round-key = Her parça (sayıların satır satır çeyreği, yarısı…) o GPU'nun şimdiye kadar tuttuğu kısmi toplamların toplamıdır; kalın: herkesinki, toplamın tamamı; ·: henüz ondan hiçbir şey yok.
