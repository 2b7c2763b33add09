# capacity strings (tr). Keep the ids identical in en/ and tr/.
cap-todays-stack = bugünkü yazılım yığını
cap-todays-stack-hover = Megatron-Core ve NeMo'nun bugün çalıştırdığıyla planlayın: FlashAttention, birleştirilmiş çekirdekler, GPU kuşağına göre GEMM hızları, TP/DP/PP örtüşmesi, dağıtık optimize edici, eşit olmayan ardışık düzen aşamaları. Kapalıyken: derslerin aktardığı 2021 Megatron-LM yazılım yığını.
cap-what-if-title = Bugünkü yazılım yığınının her parçası ne kazandırıyor (kazanan düzen, tek anahtar çevrilmiş)
cap-what-if-switch = anahtar
cap-what-if-flip = çevrilince
cap-what-if-change = yineleme süresi
cap-what-if-off = kapalı
cap-what-if-on = açık
cap-what-if-no-fit = belleğe sığmıyor
cap-what-if-invalid = bu düzen için geçerli değil
cap-switch-flash-attention = FlashAttention
cap-switch-fused-kernels = birleştirilmiş çekirdekler
cap-switch-gemm-per-generation = GPU kuşağına göre GEMM hızı
cap-switch-fp8 = FP8 GEMM'ler
cap-switch-tp-overlap = TP iletişim örtüşmesi
cap-switch-dp-overlap = DP gradyan örtüşmesi
cap-switch-distributed-optimizer = dağıtık optimize edici
cap-switch-pp-overlap = ardışık düzen gönderim örtüşmesi
cap-switch-interleaving = dönüşümlü 1F1B
cap-nccl-title = NCCL'in çalıştırdığı gibi (nccl-tests: mesaj boyutuna göre algbw ve busbw)
cap-nccl-size = boyut
cap-nccl-time = süre (µs)
cap-nccl-algbw = algbw (GB/s)
cap-nccl-busbw = busbw (GB/s)
cap-nccl-algo = algoritma
cap-nccl-proto = protokol
pl-planning = Planlanıyor… { $seconds } sn
pl-model = model
pl-gpu = GPU
pl-gpus = GPU sayısı
pl-per-node = düğüm başına
pl-between-nodes = düğümler arası
pl-seq = dizi uzunluğu
pl-global-batch = global parti
pl-plot-title = TP'ye göre verim (her TP'de en iyi yerleşim)
pl-plot-x = TP boyutu
pl-plot-y = token/sn
pl-plot-fits = her TP'nin en iyi yerleşimini birleştirir
pl-plot-inside = TP düğüm içinde
pl-plot-spans = TP düğümleri aşıyor
pl-plot-node = düğüm boyutu
pl-why = Kazanan neden kazanır
pl-fit-count = { $fit } yerleşim sığıyor; { $dropped } tanesi elendi (bellek ya da parti kuralları).
pl-col-layout = yerleşim
pl-col-iteration = yineleme (sn)
pl-col-compute = hesaplama
pl-col-tp = TP iletişimi
pl-col-bubble = boşluk (bubble)
pl-col-dp = DP iletişimi
pl-col-tokens = token/sn
pl-col-tflops = GPU başına TFLOP/s
pl-col-mfu = MFU
pl-col-memory = GPU başına bellek
pl-spans-nodes = (TP düğümleri aşıyor)
cl-side-title = Yan yana: GPU başına bir [{ $tokens }, { $hidden }] { $dtype } aktivasyonunun ({ $bytes }) all-reduce'u
cl-col-algorithm = algoritma
cl-col-rounds = tur
cl-col-messages = mesaj
cl-col-max-sent = bir GPU'nun gönderdiği en çok bayt
cl-col-busiest = en yüklü bağlantı
cl-col-total = bağlantılardaki toplam bayt
cl-col-nvlink = model: NVLink 4
cl-col-ib = model: IB NDR 400
cl-side-note = Halka ve özyinelemeli yarılama/ikiye katlama, GPU başına tamponun 2(n-1)/n'ini gönderir (bant genişliği açısından en iyisi); ağaç tamponun tamamını yukarı ve aşağı gönderir; doğrudan yöntem tek turda her GPU'ya gönderir. Model süreleri: tplab'in bağlantı başına α–β maliyet modeli.
pl-f-beats = { $winner }, { $other } yerleşimini %{ $percent } farkla geçiyor: { $reason }.
pl-trade = ; buna karşın { $term } daha çok zaman harcıyor (kazanan { $w } sn, diğeri { $o } sn)
pl-term-compute = hesaplamada
pl-term-tp = TP all-reduce'larında
pl-term-bubble = ardışık düzen boşluğunda
pl-term-dp = veri paralel iletişimde
pl-term-pp = ardışık düzen gönderimlerinde
pl-term-optimizer = optimize edici adımında
pl-f-tie = { $winner } ile { $other } arasındaki fark yalnızca %{ $percent }: modelin doğruluk payı içinde, ikisi berabere sayılır; hangisi seçilse olur.
pl-f-nofit = Hiçbir yerleşim GPU başına kullanılabilir { $usable } belleğe sığmıyor; en yakını olan { $closest } { $needs } istiyor: GPU ekleyin (daha çok ardışık düzen aşaması ya da ZeRO bölmesi), daha çok belleği olan GPU'lar kullanın ya da aktivasyonları yeniden hesaplayın.
pl-f-noshape = Bu model, küme ve parti için şekil kurallarını sağlayan bir yerleşim yok; elenenler listesine bakın.
pl-r-tie = fark modelin doğruluk payı içinde, ikisi berabere sayılır; hangisi seçilse olur
pl-r-tp-inside = TP grubu tek bir { $intra } düğümünün içinde kalıyor; TP={ $other_tp } ise düğümleri aşıyor ve all-reduce'ları { $inter } üzerinden yapıyor (yineleme başına TP iletişimi: kazanan { $w } sn, diğeri { $o } sn)
pl-r-tp-less = TP all-reduce'larında daha az zaman harcıyor (yineleme başına kazanan { $w } sn, diğeri { $o } sn; TP={ $wtp } ve TP={ $otp })
pl-r-tp-less-full = TP all-reduce'larında daha az zaman harcıyor (yineleme başına kazanan { $w } sn, diğeri { $o } sn; TP={ $wtp } ve TP={ $otp }; tam yeniden hesaplama ileri geçişin all-reduce'larını da tekrarlıyor)
pl-r-bubble = ardışık düzen boşluğu daha küçük ((p−1)/m: kazanan { $wf }, diğeri { $of }; boşta geçen süre { $w } sn ve { $o } sn)
pl-r-dp-inside = veri paralel gradyan all-reduce'u bir düğümün içinde kalıyor (açıkta kalan süre: kazanan { $w } sn, diğeri { $o } sn)
pl-r-dp-hides = gradyan all-reduce'unun daha büyük kısmı son mikro partinin geri geçişinin arkasına gizleniyor (mikro parti { $wmb } ve { $omb }; açıkta kalan süre { $w } sn ve { $o } sn)
pl-r-dp-cheaper = veri paralel gradyan all-reduce'u daha ucuz (açıkta kalan süre { $w } sn ve { $o } sn; GPU başına { $wb } ve { $ob } gradyan, DP={ $wdp } ve DP={ $odp })
pl-r-pp = ardışık düzen aşamaları arasında daha az aktivasyon gönderiyor ({ $w } sn ve { $o } sn)
pl-r-optimizer = optimize edici adımı GPU başına daha az parametreye dokunuyor ({ $w } sn ve { $o } sn)
pl-r-logits = son ardışık düzen aşaması sözlük logit'lerini her mikro partide bir kez hesaplıyor: yineleme başına kazananda { $wm }, diğerinde { $om } kez (hesaplama { $w } sn ve { $o } sn)
pl-r-recompute = daha az yeniden hesaplama yapıyor (yeniden hesaplama: kazananda { $wr }, diğerinde { $or }; hesaplama { $w } sn ve { $o } sn)
pl-r-gemm = GEMM'leri tepe performansa daha yakın çalışıyor (hesaplama { $w } sn ve { $o } sn)
pl-r-gemm-mb = GEMM'leri tepe performansa daha yakın çalışıyor (hesaplama { $w } sn ve { $o } sn; mikro parti { $wmb } ve { $omb })
pl-shortfall = GPU başına { $needs } gerekiyor (ağırlıklar { $weights }, gradyanlar { $gradients }, optimize edici { $optimizer }, aktivasyonlar { $activations }), ama kullanılabilir bellek { $usable }
pl-load-config = config.json yükle…
pl-load-config-hover = Herhangi bir modeli Hugging Face config.json dosyasıyla planlayın (model sayfasında ağırlıkların yanındaki küçük dosya).
pl-config-path = config.json dosyasının yolu
pl-config-read = Oku
pl-config-drop = ya da dosyayı bu pencereye sürükleyip bırakın
pl-config-summary = { $file }: { $layers } katman, gizli boyut { $hidden }, { $heads } kafa ({ $kv_heads } KV), FFN { $ffn }, sözlük { $vocab }; { $billions } milyar parametre
pl-config-summary-moe = { $file }: { $layers } katman, gizli boyut { $hidden }, { $heads } kafa ({ $kv_heads } KV), FFN { $ffn }, sözlük { $vocab }, { $experts } uzman (token başına { $per_token }); { $billions } milyar parametre
pl-le-zero = { $field } en az 1 olmalı (0 verildi)
pl-le-heads = TP={ $tp }, { $heads } dikkat kafasını tam bölmüyor: her GPU tam kafalar tutmalı; geçerli TP boyutları: { $valid_words }
pl-le-kv-heads = TP={ $tp }, { $kv_heads } KV kafasını tam bölmüyor: Megatron eğitimde KV gruplarını GPU'lara eşit böler (vLLM çıkarımda onları kopyalar); geçerli TP boyutları: { $valid_words }
pl-le-ffn = TP={ $tp }, { $ffn } genişliğindeki FFN'i tam bölmüyor
pl-le-layers = PP={ $pp }, { $layers } katmanı tam bölmüyor; { $layers } sayısının bir bölenini seçin
pl-le-batch = global parti { $global_batch }, mikro parti { $micro_batch } × DP { $dp } çarpımının katı değil; bunları global partiyi tam bölecek şekilde seçin
pl-le-gpu-count = TP={ $tp } × PP={ $pp } × DP={ $dp } = { $needed } GPU'luk yerleşim kümedeki { $gpus } GPU ile uyuşmuyor
pl-le-tp-cluster = TP={ $tp }, kümedeki { $gpus } GPU'dan büyük; TP ≤ { $gpus } seçin ya da daha büyük bir küme kullanın
pl-le-zero-stage = ZeRO aşaması 0, 1, 2 ya da 3 olmalı ({ $zero } verildi)
pl-le-over-limit = { $field } { $value }, { $max } sınırını aşıyor; en çok { $max } olan bir { $field } kullanın
pl-le-tokens = global parti { $global_batch } × dizi { $seq } = { $tokens } token, bellek modelinin saydığı aralığın dışında; aynı anda en çok { $max } (2^40) token olabilir; daha küçük bir parti ya da dizi verin
pl-le-virtual = GPU başına { $v } model parçasıyla dönüşümlü yerleştirme (interleaving), en az { $v } katmanlı ardışık düzen aşamaları ister (PP={ $pp } en az { $min_stage } katmanlı aşamalar veriyor); daha az sanal aşama ya da daha küçük bir PP kullanın
pl-le-cp = { $cp } GPU üzerinde bağlam paralelliği, 2·cp = { $two_cp } ile bölünebilen bir dizi uzunluğu ister (nedensel yük dengesi için her GPU iki parça alır); verilen: { $seq }
pl-le-kv-serve = TP={ $tp }, { $kv_heads } KV kafasına uymuyor: çıkarım için ya TP KV kafalarını tam bölmeli (her GPU'da tam KV kafaları, Megatron-LM) ya da KV kafaları TP'yi tam bölmeli (her KV kafası birkaç GPU'ya kopyalanır, vLLM); geçerli TP boyutları: { $valid_words }
pl-me-json = config.json geçerli bir JSON değil: { $message }
pl-me-not-object = config.json'un en üst düzeyi bir JSON nesnesi olmalı
pl-me-missing = config.json'da '{ $key }' anahtarı yok ({ $hint }); bu anahtarı dosyaya ekleyin ya da bunun yerine hazır bir model seçin
pl-me-bad-value = config.json'daki '{ $key }' anahtarı { $expected } olmalı ({ $got } verildi)
pl-me-zero = { $field } en az 1 olmalı (0 verildi)
pl-me-over-limit = { $field } { $value }, { $max } sınırını aşıyor; hiçbir gerçek model buna yaklaşmıyor, değeri denetleyin
pl-me-too-many = bu modelde { $params } parametre var, { $limit } (10^15) sınırının üstünde; katman sayısını, gizli boyutu, FFN genişliğini ve uzman sayısını denetleyin
pl-me-hidden-heads = gizli boyut { $hidden }, { $heads } kafanın katı değil; kafa boyutu tam sayı olmalı
pl-me-kv-heads = { $heads } sorgu kafası { $kv_heads } KV kafasına gruplanamıyor: sorgu kafası sayısı KV kafası sayısının katı olmalı
pl-me-experts = token başına { $per_token } uzman, 1 ile uzman sayısı ({ $experts }) arasında olmalı
pl-me-phrase-number-of-transformer-blocks = transformer bloğu sayısı
pl-me-phrase-model-width = model genişliği
pl-me-phrase-attention-heads = dikkat kafası sayısı
pl-me-phrase-vocabulary-size = sözlük boyutu
pl-me-phrase-context-length = bağlam uzunluğu
pl-me-phrase-query-heads = sorgu kafası sayısı
pl-me-phrase-mlp-inner-width = MLP iç genişliği
pl-me-phrase-a-non-negative-integer = negatif olmayan bir tam sayı
pl-me-phrase-a-positive-integer = pozitif bir tam sayı
pl-me-phrase-a-directory = bir klasör
pl-me-phrase-a-fifo--named-pipe- = bir FIFO (adlandırılmış boru)
pl-me-phrase-a-socket = bir soket
pl-me-phrase-a-device = bir aygıt
pl-me-phrase-not-a-regular-file = normal bir dosya değil
pl-fe-not-found = { $path }: bulunamadı; yolu denetleyin
pl-fe-not-file = { $path } { $kind }, normal bir dosya değil; bir { $what } dosyasının yolunu verin
pl-fe-too-large = { $path } { $size } bayt, bir { $what } dosyası için { $limit } baytlık sınırın üstünde
pl-fe-not-text = { $path } UTF-8 metin değil
pl-fe-io = { $path } okunamıyor: { $message }
cl-finished = { $rounds } turun hepsi bitti: her GPU toplamın tamamını tutuyor (her hücrede Σ hepsi)
cl-rounds-done = / { $rounds } tur bitti
cl-sum-all = Σ hepsi
pl-col-layout-zero = yerleşim (hepsinde ZeRO-{ $zero })
pl-col-memory-short = bellek/GPU
cl-col-max-sent-short = GPU başına en çok bayt
cl-err-empty = bir kolektif işlem en az bir GPU ister, ama grup boş; her GPU için bir tampon verin
cl-err-length = her GPU aynı uzunlukta bir tampon vermeli: GPU 0 { $expected } eleman veriyor, GPU { $rank } ise { $found }; tüm GPU'lar eşleşsin diye tensörü doldurun ya da bölün
cl-err-root = broadcast kökü { $root }, { $n } GPU'luk bir grup için aralık dışında; 0..{ $n } aralığında bir kök seçin
cl-err-unsupported = { $kind } için { $algorithm } çizelgesi yok; şunlardan birini kullanın: { $supported }
cl-err-power-of-two = özyinelemeli yarılama/ikiye katlama ile { $kind } için GPU sayısı ikinin kuvveti olmalı, { $n } GPU verildi; halka ya da doğrudan yöntemi kullanın (all-reduce fazla GPU'ları katlayarak içeri alır ve her grup boyutunu destekler)
cl-err-too-many = katkı maskeleri en fazla { $max } GPU izleyebilir, { $n } verildi; en fazla { $max } GPU'luk bir grubu canlandırın
cl-err-program-order = program { $op } işlemini, { $tensor } tensörünü üreten bir işlemden önce çalıştırıyor: çizelge ile yürütücüsü uyuşmuyor; bu tplab'de bir hata, lütfen bildirin
cl-err-foreign-op = yürütücü, programında olmayan { $op } işlemiyle karşılaştı: çizelge ile yürütücü uyuşmuyor; bu tplab'de bir hata, lütfen bildirin
recompute-name-none = yok
recompute-name-selective = seçici
recompute-name-full = tam
