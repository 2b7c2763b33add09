# views strings (tr). Keep the ids identical in en/ and tr/.
#
# Hitap kuralı (the app's form of address, all tr/*.ftl files), as in the lessons: *siz*.
# - A control's own label (a button, checkbox or menu entry naming the command it runs, at most
#   eight words outside parentheses, no sentence punctuation . ? ! ;) is a bare verb, as Turkish
#   software writes commands: "Oynat", "Baştan başla", "PNG olarak kaydet", "TP=4 kullan".
# - Everything else (sentences, hints, prompts, questions, goals, tooltips, fixes in running
#   text) addresses the learner as siz: imperatives in -(y)In ("seçin", "tıklayın", "deneyin",
#   "bakın", "tahmin edin"), possessives in -(I)nIz ("planınız", "tahmininiz", "adınız"),
#   "sizin", "kendiniz". No sen forms anywhere (sen, senin, sana, kendin, "-(I)n planın").
# tests/tests/turkish_address.rs checks both.

## Shared by the views: errors of an invalid scenario and their fixes.
list-or = veya
invalid-choice = Geçersiz seçim: { $error }
err-hidden-heads = { $hidden } gizli boyutu { $heads } kafaya bölünemez: gizli boyut kafa sayısının katı olmalı (kafa boyutu = gizli boyut / kafa sayısı).
valid-heads = Gizli boyutu tam bölen kafa sayıları: { $list }.
use-heads = { $heads } kafa kullan
nearest-tp = En yakın geçerli TP boyutları: { $list }
use-tp = TP={ $tp } kullan
err-zero = { $field } en az 1 olmalı (0 verildi)
err-over-limit = { $field } = { $value }, { $max } sınırının üzerinde; en fazla { $max } kullanın
err-tp-range = TP boyutu 1 ile { $max } arasında olmalı ({ $tp } verildi)
err-heads-tp = { $heads } kafa { $tp } GPU'ya bölünemez: her GPU tam kafalar tutmalı (kafa sayısı GPU sayısına tam bölünmeli); geçerli TP boyutları: { $valid }
err-ffn-tp = { $ffn } FFN genişliği { $tp } GPU'ya bölünemez: fc1'in sütunları ve fc2'nin satırları eşit bölünmeli (FFN genişliği GPU sayısına tam bölünmeli); geçerli TP boyutları: { $valid }
err-too-large = bu senaryo yaklaşık { $needed } tensör belleği ister, { $limit } sınırının üzerinde; dizi uzunluğunu, partiyi, gizli boyutu ya da katman sayısını küçültün
err-seq-tp = dizi paralelliği diziyi GPU'lara böler: { $seq } uzunluğundaki dizi { $tp } GPU'ya bölünemez (dizi uzunluğu GPU sayısına tam bölünmeli); geçerli TP boyutları: { $valid }; ya da dizi uzunluğunu { $tp } ile tam bölünen bir değer yapın
err-kv-heads = { $kv } KV kafası { $heads } sorgu kafasına hizmet edemez: her KV kafası aynı sayıda sorgu kafasına hizmet etmeli (sorgu kafaları KV kafalarına tam bölünmeli); geçerli KV kafası sayıları: { $valid }
err-kv-tp = { $kv } KV kafası { $tp } GPU'ya dağıtılamaz: her GPU ya tam KV kafaları (KV kafaları GPU'lara tam bölünür) ya da bir KV kafasının eşit bir payını (GPU'lar KV kafalarına tam bölünür) tutmalı; geçerli TP boyutları: { $valid }
err-dtype = { $dtype } veri tipi CPU motorunda çalışamaz; f32 ya da f64 kullanın

## Side bar.
view-playground = Oyun alanı
view-step = Adım adım
view-collectives = Kolektifler
view-timeline = Zaman çizelgesi
view-memory = Bellek
view-verify = Doğrulama
view-precision = Hassasiyet
view-vocab = Sözlük
view-train = Eğitim
view-serve = Çıkarım
view-planner = Planlayıcı
view-lessons = Dersler
view-quiz = Kısa sınav
view-gpu = GPU
theme-light = Açık
theme-dark = Koyu
presenter-mode = Sunum modu (F11)
presenter-hint = Tam ekran ve büyük yazı. Boşluk oynat/duraklat, Sol/Sağ ok ya da PageUp/PageDown adım, Home baştan, 1-8 TP seçer.
side-scenario = gizli boyut { $hidden }, { $heads } kafa, TP={ $tp }, { $dtype }
export-png = PNG olarak kaydet
export-hint = Pencereyi, görünümün ve gösterdiğinin adını taşıyan bir PNG olarak { $dir } klasörüne kaydeder.
export-saved = Kaydedildi: { $path }
export-failed = Kaydedilemedi: { $error }

## Playground.
pg-title = Oyun alanı: bir katman nasıl bölünür
pg-hide-activations = Aktivasyonları gizle
pg-preset = Hazır ayar:
pg-hidden = gizli boyut
pg-heads = kafa
pg-kv-heads = KV kafası
pg-kv-hint = Gruplanmış sorgu dikkati (GQA): sorgu kafalarından daha az anahtar/değer kafası; her biri bir grup sorgu kafası tarafından paylaşılır. Kafa sayısına eşitse sıradan çok kafalı dikkat.
pg-ffn = ffn
pg-seq = dizi
pg-batch = parti
pg-layers = katman
pg-tp-field = TP (en çok 64)
pg-dtype = veri tipi
pg-algorithm = algoritma
pg-sp = dizi paralelliği
pg-sp-hint = Korthikanti vd. 2022: LayerNorm, bias ve artık bağlantı token'ların 1/TP'si üzerinde çalışır; her all-reduce bir reduce-scatter ile bir all-gather'a dönüşür.
pg-note-copy = { " " }(kopya { $copy } / { $copies }: TP, KV kafası sayısından büyük; bu yüzden vLLM'deki gibi her KV kafası çoğaltılır)
pg-note-qkv-gqa = { $first }-{ $last } kafalarının Q sütunları, { $kvfirst }-{ $kvlast } KV kafalarının K ve V sütunları{ $copy } (sütun paralel)
pg-note-qkv = { $first }-{ $last } kafalarının Q, K ve V sütunları (sütun paralel)
pg-note-out = { $first }-{ $last } kafalarının satırları (satır paralel: çıktı kısmi bir toplamdır)
pg-note-fc1 = bir sütun bloğu (sütun paralel; GeLU yerel kalır)
pg-note-fc2 = bir satır bloğu (satır paralel: çıktı kısmi bir toplamdır)
pg-split-cols = sütunlara bölünmüş
pg-split-rows = satırlara bölünmüş
pg-replicated = kopyalanmış
pg-shard-hover = GPU { $rank }: { $name } parçası [{ $rows }, { $cols }], { $bytes }
    { $note }
pg-grid-cell = ızgara hücresi = { $cell }x{ $cell } eleman
pg-matrices-a11y = { $tp } GPU'ya bölünmüş ağırlık matrisleri: { $summary }
pg-gqa-head = gruplanmış sorgu dikkati: { $heads } sorgu kafası { $kv } KV kafasını paylaşır (KV kafası başına { $per })
pg-gqa-holders = GPU { $gpus }: KV kafası { $k }
pg-gqa-replicated = { $head }; TP={ $tp } > { $kv } KV kafası, bu yüzden her KV kafası { $copies } GPU'da kopyalanır (vLLM kuralı: GPU'lar KV kafalarına tam bölünür): { $holders }. Kopyaların K/V gradyanları her grubun içinde all-reduce ile toplanır.
pg-gqa-split = { $head }; her GPU { $per } tam KV kafası tutar (Megatron-LM kuralı: KV kafaları GPU'lara tam bölünür), kopya yok.
pg-activations = Her GPU'daki aktivasyonlar (katman 0, ileri geçiş)
pg-each-of = Şu GPU'ların her biri
pg-holds = şunları tutar:
pg-col-op = işlem
pg-col-output = çıktı
pg-col-bytes = bayt
pg-col-kind = tür
pg-kind-partial = kısmi toplam
pg-kind-split = 1/TP bölünmüş
pg-kind-replicated = kopyalanmış
pg-kind-tokens = token'lara göre 1/TP bölünmüş
pg-kinds-explained = 1/TP bölünmüş: her GPU kendi sütunlarını tutar. Kısmi toplam: her GPU tam sonucun bir terimini tutar; g all-reduce'u bunları toplar, ardından bias bir kez eklenir. Token'lara göre bölünmüş (dizi paralelliği): her GPU token satırlarının 1/TP'sini tutar; g bir reduce-scatter, f bir all-gather olur.

## Timeline.
tl-title = Zaman çizelgesi: GPU başına hesaplama ve iletişim
tl-source-proportional = Süreler, nominal hızlarda FLOP ve bayt sayısıyla orantılıdır: saniyeleri değil çubukları karşılaştırın.
tl-source-model = Süreler tplab'in maliyet modelinden gelir (roofline hesaplama, alfa-beta bağlantılar; 8 GPU'dan büyük bir TP grubu InfiniBand'e geçer).
tl-source-measured = Süreler bir GPU'da CUDA olaylarıyla ölçüldü.
tl-times = süreler
tl-times-proportional = FLOP ve baytla orantılı
tl-times-model = maliyet modeli: { $gpu }
tl-too-many = Bir kerede çizilemeyecek kadar çok olay var; katman:
tl-makespan = Toplam süre { $makespan } µs; bunun { $comm } µs'si (%{ $share }) her GPU'nun beklediği iletişimdir.
tl-axis-time = zaman (µs)
tl-compute = hesaplama
tl-compute-own-colour = hesaplama (her GPU kendi renginde)
tl-communication = iletişim
tl-backward-begins = geri geçiş başlar
tl-bar-hover = { $name }
    başlangıç { $start } µs, süre { $duration } µs, bitiş { $end } µs

## Memory.
mem-title = TP büyüdükçe GPU başına bellek
mem-weights = ağırlıklar
mem-gradients = gradyanlar
mem-optimizer = optimize edici durumları (Adam m, v)
mem-activations = aktivasyonlar
mem-intro = { $dtype } veri tipinde { $layers } katman, Adam ile eğitim. Ağırlıklar, gradyanlar ve optimize edici durumları 1/TP'ye bölünür; LayerNorm'lar ve satır paralel bias'lar hariç. LayerNorm aktivasyonları kopyalanmış kalır, bu yüzden toplam tam 1/TP'ye inmeden durur.
mem-now = şu an
mem-axis = GPU başına MiB
mem-unsharded = bölünmemiş toplam (TP=1)
mem-total = GPU başına toplam
mem-vs-unsharded = bölünmemişe göre
mem-percent = %{ $percent }

## Walkthrough chrome.
st-title = Adım adım: bir katman, işlem işlem
st-empty = İz boş.
st-play = Oynat
st-pause = Duraklat
st-key-space = Boşluk
st-previous = Önceki adım
st-key-left = Sol ok tuşu (ya da PageUp)
st-next = Sonraki adım
st-key-right = Sağ ok tuşu (ya da PageDown)
st-restart = Baştan başla
st-step = adım
st-speed = adım/sn
st-issued = şimdiye kadar yapılan: ileri { $f }, geri { $b }
st-counter = bu katmandaki all-reduce'lar: ileri { $f }, geri { $b }
st-counter-kv = ; ayrıca kopyalanmış KV kafalarının gradyanları için { $kv } all-reduce, her kopya grubu için bir tane
st-counter-other = ; all-gather ve reduce-scatter'lar: ileri { $f }, geri { $b }
st-describe = Adım { $n }/{ $total } · katman { $layer } · { $pass } · { $label }, girişler { $inputs }, çıktı [{ $rows }, { $cols }]
st-strip-a11y = Katman { $layer } işlemleri, f ve g işaretli; şu anki: { $current }
st-plan-walk-student = Bir öğrencinin planı (adsız), { $tp } GPU üzerinde: { $splits }. Tasarım laboratuvarının küçük katmanı: gizli boyut { $hidden }, { $heads } kafa, { $tokens } token.
st-plan-walk-presenter = { $tp } GPU üzerinde planınız: { $splits }. Tasarım laboratuvarının küçük katmanı: gizli boyut { $hidden }, { $heads } kafa, { $tokens } token (diğer görünümlerin senaryosu değil).
st-plan-walk = { $tp } GPU üzerinde planınız: { $splits }. Tasarım laboratuvarının küçük katmanı: gizli boyut { $hidden }, { $heads } kafa, { $tokens } token (kenar çubuğundaki senaryo bu değil).
st-plan-refused-now = Planınız, tasarım laboratuvarındaki şu hâliyle kurallarca reddediliyor; adım adım izlenecek bir şeyi yok. Orada düzeltin ya da Megatron'un bölmesini izleyin.
st-plan-sp = dizi paralelliği
st-plan-back = Tasarım laboratuvarına dön
st-plan-megatron = Megatron'un bölmesi
st-strip-slice = dilim

## Ops of the block program in words (Turkish only needs them; English uses the engine's labels).
op-ln1 = LayerNorm 1
op-attn-f = dikkatten önceki f
op-attn-qkv = QKV projeksiyonu (sütun paralel)
op-attn-core = bu GPU'nun kafalarında dikkat
op-attn-out = çıkış projeksiyonu (satır paralel)
op-attn-g = dikkatten sonraki g
op-attn-bias-residual = çıktı bias'ı ve artık bağlantı
op-ln2 = LayerNorm 2
op-mlp-f = MLP'den önceki f
op-mlp-fc1 = fc1 (sütun paralel)
op-mlp-gelu = GeLU (yerel)
op-mlp-fc2 = fc2 (satır paralel)
op-mlp-g = MLP'den sonraki g
op-mlp-bias-residual = fc2 bias'ı ve artık bağlantı
op-mlp-bias-residual-bwd = fc2 bias gradyanı
op-mlp-g-bwd = MLP'den sonraki g, geri geçişte (birim işlem)
op-mlp-fc2-bwd = fc2 gradyanları
op-mlp-gelu-bwd = GeLU gradyanı
op-mlp-f-bwd-gather = LayerNorm 2 çıktısı yeniden toplanır
op-mlp-fc1-bwd = fc1 gradyanları
op-mlp-f-bwd = MLP'den önceki f, geri geçişte: giriş gradyanı toplanır
op-ln2-bwd = LayerNorm 2 gradyanı
op-attn-bias-residual-bwd = çıktı bias gradyanı
op-attn-g-bwd = dikkatten sonraki g, geri geçişte (birim işlem)
op-attn-out-bwd = çıkış projeksiyonu gradyanları
op-attn-core-bwd = dikkat gradyanı
op-attn-f-bwd-gather = LayerNorm 1 çıktısı yeniden toplanır
op-attn-qkv-bwd = QKV projeksiyonu gradyanları
op-attn-kv-grads = K/V kopyalarının gradyanları toplanır
op-attn-f-bwd = dikkatten önceki f, geri geçişte: giriş gradyanı toplanır
op-ln1-bwd = LayerNorm 1 gradyanı
op-sp-grads = LayerNorm ve bias gradyanları toplanır
op-embed-lookup = gömme araması (kendi sözlük satırları)
op-embed-g = gömmeler toplanır
op-lm-head = dil modeli kafası (kendi sözlük sütunları)
op-ce-local = kendi sütunlarında çapraz entropi istatistikleri
op-ce-max = GPU'lar arasında satır maksimumu
op-ce-sumexp = GPU'lar arasında üstellerin toplamı
op-ce-target = GPU'lar arasında hedef logit
op-ce-bwd = çapraz entropi gradyanı
op-lm-head-bwd = dil modeli kafası gradyanları
op-lm-head-f-bwd = dil modeli kafasının giriş gradyanı toplanır
op-embed-bwd = gömme gradyanı (kendi satırları)
op-block-input-move = blok girişi yeniden dağıtılır
op-attn-qkv-move = QKV yeniden dağıtılır
op-attn-core-move = dikkat çıktısı yeniden dağıtılır
op-attn-residual-move = artık akış yeniden dağıtılır
op-mlp-fc1-move = fc1 çıktısı yeniden dağıtılır
op-mlp-gelu-move = GeLU çıktısı yeniden dağıtılır
op-block-output-move = blok çıktısı yeniden dağıtılır
op-attn-qkv-bias = QKV bias'ı eklenir
op-attn-out-bias = çıkış projeksiyonu bias'ı eklenir
op-mlp-fc1-bias = fc1 bias'ı eklenir
op-mlp-fc2-bias = fc2 bias'ı eklenir
op-attn-qkv-bias-bwd = QKV bias gradyanı
op-attn-out-bias-bwd = çıkış projeksiyonu bias gradyanı
op-mlp-fc1-bias-bwd = fc1 bias gradyanı
op-mlp-fc2-bias-bwd = fc2 bias gradyanı
op-block-output-move-bwd = çıktı gradyanı yeniden dağıtılır
op-mlp-gelu-move-bwd = GeLU çıktısının gradyanı yeniden dağıtılır
op-mlp-fc1-move-bwd = fc1 çıktısının gradyanı yeniden dağıtılır
op-attn-residual-move-bwd = artık akışın gradyanı yeniden dağıtılır
op-attn-core-move-bwd = dikkat çıktısının gradyanı yeniden dağıtılır
op-attn-qkv-move-bwd = QKV gradyanı yeniden dağıtılır
op-block-input-move-bwd = giriş gradyanı yeniden dağıtılır
op-grads-gather = bir bias gradyanı toplanır
op-ln1-move = LayerNorm 1 çıktısı yeniden dağıtılır
op-attn-out-move = çıkış projeksiyonunun çıktısı yeniden dağıtılır
op-ln2-move = LayerNorm 2 çıktısı yeniden dağıtılır
op-mlp-fc2-move = fc2 çıktısı yeniden dağıtılır
op-ln1-move-bwd = LayerNorm 1 çıktısının gradyanı yeniden dağıtılır
op-attn-out-move-bwd = çıkış projeksiyonunun çıktı gradyanı yeniden dağıtılır
op-ln2-move-bwd = LayerNorm 2 çıktısının gradyanı yeniden dağıtılır
op-mlp-fc2-move-bwd = fc2 çıktısının gradyanı yeniden dağıtılır
op-linear-as = { $op } ({ $how })
op-split-column = sütun paralel
op-split-row = satır paralel
op-split-whole = her GPU'da tam
op-split-sequence = kendi token'larında
op-base-attn-qkv = QKV projeksiyonu
op-base-attn-out = çıkış projeksiyonu
op-base-mlp-fc1 = fc1
op-base-mlp-fc2 = fc2
op-identity-half = birim işlem, bir all-reduce'un öbür yarısı (iletişim yok)
op-attn-core-all = tüm kafalarda dikkat (her GPU hepsini hesaplar)

## Verify.
vf-title = Doğrulama: bölünmüş çalıştırma CPU referansına karşı
vf-run-again = Yeniden çalıştır
vf-failed = Çalıştırma başarısız: { $error }
vf-passed = ✔ Geçti: { $total } denetimin tamamı tolerans içinde ({ $label })
vf-failed-checks = ✖ Kaldı: { $total } denetimden { $failed } tanesi toleransı aşıyor
vf-worst = en kötüsü: { $name }{ $rank } en büyük mutlak hata { $abs }, en büyük göreli hata { $rel }
vf-tolerance = tolerans: göreli { $tol } — { $reason }
vf-tolerance-plain = tolerans: { $tol } bağıl fark, { $dtype } yuvarlamasının bu katmanda birikebileceği kadar. Bölme yalnızca toplamaların sırasını değiştirir; doğru bir bölme referanstan yalnızca yuvarlama kadar, yanlış bir bölme çok daha fazla ayrılır.
vf-tolerance-how = Tolerans nasıl belirlenir
vf-tp1 = TP=1: gösterilecek all-reduce yok; yukarıdaki çıktı denetimi tüm çalıştırmayı karşılaştırır.
vf-all-reduce = all-reduce
vf-collective-label = katman { $layer }, { $pass }: { $op }
vf-check-output = katmanın çıktısı
vf-check-grad-input = giriş gradyanı
vf-check-rank-count = GPU sayısı
vf-check-grad = { $param } gradyanı (katman { $layer })
vf-check-op = { $op } çıktısı (katman { $layer })
vf-before = Önce: her GPU'nun kısmi çıktısı [{ $rows }, { $cols }] (mavi negatif, turuncu pozitif; tek ölçek)
vf-before-backward = Önce: her GPU'nun giriş gradyanındaki payı [{ $rows }, { $cols }] (mavi negatif, turuncu pozitif; tek ölçek)
vf-more-gpus = … { $count } GPU daha
vf-after = Sonra: all-reduce ile toplanmış sonuç
vf-reference = CPU referansı
vf-error = |sonra - referans|: en büyük mutlak { $abs }, en büyük göreli { $rel }
vf-scale-caption = Mutlak hata, logaritmik ölçek: beyaz, toleransın izin verdiğinin milyonda biri; en koyu renk toleransın kendisi.
vf-scale-tol = tolerans
vf-a11y-heatmap = Hata ısı haritası: her hücrenin referansa göre mutlak hatası, beyazdan (toleransın milyonda biri) en koyu renge (toleransın kendisi)
vf-a11y-scale = Hata renk ölçeği, toleransın milyonda birinden toleransın kendisine
vf-stage-weights = rastgele ağırlıklar
vf-stage-reference = CPU referansı
vf-stage-sharded = parçalı çalıştırma
vf-stage-verify = karşılaştırma

## Precision.
pr-title = Hassasiyet: aynı blok dört veri tipinde ve her TP boyutunda
pr-intro = { $label } ileri geçişi f64, f32, bf16 ve f16'da (bf16 ve f16 taklit edilir: f32 aritmetiği, her işlem sınırında ve all-reduce'ta yuvarlanarak), TP { $tps } ile. Her sonuç bölünmemiş f64 referansıyla ve aynı veri tipindeki TP=1 ile karşılaştırılır: yalnızca toplama sırasının etkisi.
pr-running = { $count } ileri geçiş çalışıyor ({ $seconds } sn)
pr-run = Taramayı çalıştır
pr-run-again = Yeniden çalıştır
pr-stale = (bu çalıştırmadan sonra senaryo değişti)
pr-failed = Tarama başarısız: { $error }
pr-reference = Referans: max|y| = { $max }, RMS { $rms }; en uzun indirgeme K = { $k }. ULP'ler max(|değer|, RMS) üzerinden sayılır; böylece sıfıra yakın değerler onları şişirmez.
pr-col-dtype = veri tipi
pr-col-tp = TP
pr-col-rel = f64'e göre en büyük göreli hata
pr-col-eps = ε cinsinden
pr-col-rms = RMS hata
pr-col-differs = TP=1'den farklı
pr-col-ulps = TP=1'e göre medyan / en büyük ULP
pr-differs = %{ $percent } ({ $elements } elemandan)
pr-baseline = (temel)
pr-histogram-of = f64'e göre hata, şu tipin ULP'leriyle:
pr-axis-share = çıktıların yüzdesi
pr-axis-ulps = max(|referans|, RMS) üzerinden ULP cinsinden |hata|
pr-findings-title = Sayılar ne diyor
pr-f-bounds = sınırlar √K·ε / K·ε
pr-f-spread = TP boyutları boyunca f64'e göre en büyük göreli hata
pr-f-vs-tp1 = TP ile TP=1 arasındaki en büyük fark
pr-f-eps = { $eps } ε·max|ref|
pr-f-verdict = sonuç
pr-f-ok = her TP K·ε içinde
pr-f-over = K·ε'nin üzerinde: bir hata arayın
pr-findings = Her veri tipinde tüm TP boyutları f64'e yaklaşık aynı uzaklıktadır ve TP boyutları arasındaki farklar yuvarlamanın kendisi kadardır (K = { $k }): bölme yalnızca toplamaların sırasını değiştirir.
pr-why-title = TP=1 ile TP=2 neden farklı, ve bu neden bir hata değil
pr-why = Kayan noktalı toplama birleşmeli değildir: (a + b) + c ile a + (b + c) farklı yerlerde yuvarlanır. Satır paralel katmanlar (dikkatin çıkış projeksiyonu ve fc2) TP=2'de K terimin tek bir birikimli toplamı yerine (ilk yarının toplamı) + (ikinci yarının toplamı) hesaplar ve ikisini all-reduce'ta toplar. Bu yüzden her çıktı elemanı birkaç ULP farkla başka türlü yuvarlanır. K terimli bir toplamın yuvarlama hatası, HER sırada, en kötü durumda yaklaşık K·ε, tipik olarak √K·ε kadardır; TP=1 ve TP=2 sonuçları aynı kesin değerin eşit derecede geçerli iki yuvarlamasıdır ve f64 sonucuna ikisi de aynı yakınlıktadır. TP=1 "daha doğru" değildir ve fark bir hata değildir. Bir hata (yanlış bir parça, eksik bir bias, iki kez yapılan all-reduce) K·ε'nin çok üzerinde bir hata olarak görünür.

## Train.
tr-title = Eğitim: aynı model TP 1, 2 ve 4 ile
tr-intro = Karakter düzeyinde bir GPT ({ $layers } katman, gizli boyut { $hidden }, { $heads } kafa) rehberin devamını getirmeyi öğrenir ({ $chars } karakter). Her TP boyutu kendi parçalarını aynı tohumdan, aynı partilerle eğitir; bölme yalnızca toplamaların sırasını değiştirir, bu yüzden eğriler üst üste binmelidir.
tr-steps = adım
tr-lr = öğrenme oranı
tr-gqa = gruplanmış sorgu dikkati (2 KV kafası)
tr-gqa-hint = 4 sorgu kafası 2 KV kafasını paylaşır. TP=2'de her GPU bir KV kafası tutar; TP=4'te her KV kafası 2 GPU'da kopyalanır ve kopyalar aynı kalsın diye gradyanlarını all-reduce ile toplarlar.
tr-stop = Durdur
tr-start = Eğitimi başlat
tr-progress = adım { $done }/{ $steps }
tr-failed = Eğitim başarısız: { $error }
tr-err-no-steps = adım sayısı en az 1 olmalı (0 verildi)
tr-err-too-many-steps = { $steps } adım, { $max } sınırının üzerinde; daha az adım kullanın
tr-err-lr = öğrenme oranı pozitif bir sayı olmalı ({ $lr } verildi); Adam için 3e-3, SGD için 0,1 deneyin
tr-err-text-short = metin { $chars } karakter; seq { $seq } + 1 uzunluğundaki pencereler için çok kısa; seq değerini küçültün
tr-err-diverged = eğitim TP={ $tp } ile { $steps } adımın { $step }. adımında ıraksadı: kayıp { $loss }; öğrenme oranını (şu an { $lr }) düşürüp yeniden deneyin
tr-finished = Bitti: kayıp { $first } değerinden { $last } değerine geldi; çalıştırma boyunca TP=1'e en büyük fark: TP=2 { $gap2 }, TP=4 { $gap4 } (göreli)
tr-axis-step = adım
tr-axis-loss = çapraz entropi (karakter başına nat)
tr-coincide = Üç eğri üst üste biner: TP sayıların nerede hesaplandığını değiştirir, neyin hesaplandığını değil. TP=2 kesik, TP=4 noktalı çizgiyle TP=1'in üzerinde.
tr-lr-range = 0,00001 ile 1 arası (daha büyük bir değer 1 olur); varsayılan 0,003, bu modeli Adam ile düzgünce eğitir.
tr-rose = Eğriler burada üst üste binmiyor: kayıp { $first } değerinden { $last } değerine yükseldi, çünkü { $lr } öğrenme oranı bu model için fazla yüksek; sayılar büyüdükçe TP boyutlarının küçük yuvarlama farkları da büyüdü (TP=1'e en büyük fark: { $gap }). Eğiten bir öğrenme oranıyla (varsayılan 0,003) eğriler üst üste biner.
tr-apart = Eğriler burada kaybın { $gap } kadarına varan ölçüde ayrılıyor: TP boyutları kısmi toplamlarını başka bir sırayla toplar ve bu çalıştırmada yuvarlama farkları adımlar boyunca büyüdü. f64'te gözün görebileceğinin çok altında kalırlar.

## Vocabulary.
vo-title = Sözlük paralelliği: gömme ve kayıp sözlüğe göre bölünür
vo-vocab = sözlük boyutu
vo-pad = şunun katına doldur:
vo-intro = V = { $vocab }, { $padded } boyutuna dolduruldu ({ $padding } dolgu satırı); { $tp } GPU'nun her birinde { $rows } satır; gizli boyut { $hidden } ve { $tokens } token senaryodan gelir. Dil modeli kafası gömmeyle aynı ağırlıkları paylaşır (weight tying).
vo-ce = Tam logitler olmadan çapraz entropi: her GPU { $ce } gönderir (satır maksimumu, üstellerin toplamı ve hedef logit için all-reduce'lar, her biri { $tokens } sayı); [{ $tokens }, { $padded }] logitleri toplamak GPU başına { $gather } gönderirdi, { $ratio } kat fazla.
vo-col-pass = geçiş
vo-col-event = olay
vo-col-what = ne
vo-col-shape = GPU başına biçim
vo-col-sends = her GPU'nun gönderdiği
vo-compute = hesaplama
vo-checking = denetleniyor ({ $seconds } sn)
vo-check = Referansla karşılaştır
vo-check-failed = Denetim başarısız: { $error }
vo-passed = ✔ Geçti
vo-failed = ✖ Kaldı
vo-result = { $verdict }: kayıp { $loss }, referans { $reference } (V={ $vocab }, TP={ $tp }, { $dtype }); { $checks } denetim, en kötü göreli hata { $worst }, tolerans { $tolerance }; dolgu satırlarının gradyanları sıfır
vo-split-a11y = sözlük bölünmesi: GPU başına { $rows } satır, sonda { $padding } dolgu satırı
vo-rank-rows = GPU { $rank }: { $first }–{ $last } arası satırlar
vo-err-too-large = gömme tablosu { $elements } eleman tutardı ({ $padded } dolgulu satır × gizli boyut { $hidden }); bu CPU gösteriminin ayırdığı { $limit } sınırının üzerinde; sözlük boyutunu ya da gizli boyutu küçültün
vo-err-padding = sözlük boyutu { $vocab }, { $granularity } × TP { $tp } katına doldurulunca 64 bite sığmıyor; doldurma katı en fazla { $max } olsun
vo-err-memory = bu sözlük çalıştırması yaklaşık { $needed } gerektiriyor ({ $tokens } token × { $padded } dolgulu logit satırı, tablo ve gradyanları); { $limit } sınırının üzerinde; token sayısını, sözlük boyutunu ya da gizli boyutu küçültün

## GPU.
gpu-title = GPU: aynı parçalar gerçek donanımda
gpu-cuda-compiled = CUDA desteğiyle derlendi: { $answer }
gpu-col-library = kütüphane
gpu-col-state = durum
gpu-col-version = sürüm
gpu-col-needed = gerektiği yer
gpu-found = bulundu
gpu-missing = eksik
gpu-without = tplab'in geri kalanı GPU olmadan çalışır: simülatör aynı parçaları CPU üzerindeki sanal GPU'larda çalıştırır.
gpu-look-again = Yeniden bak
gpu-scenario = Senaryo: { $label }
gpu-scenario-words = gizli boyut { $hidden }, { $heads } kafa{ $kv }, FFN { $ffn }, dizi uzunluğu { $seq }, parti { $batch }, katman { $layers }, TP={ $tp }{ $sp }, { $dtype }
gpu-scenario-kv = { " " }({ $kv } KV kafası)
gpu-scenario-sp = , dizi paralelliği
gpu-iterations = yineleme{ " " }
gpu-run = GPU'da çalıştır
gpu-run-disabled = kullanılabilir bir GPU, geçerli bir senaryo ve süren bir çalıştırmanın olmaması gerekir
gpu-split = Bölme:
gpu-split-megatron = Megatron-LM'inki (birleşik çekirdekler)
gpu-split-lab = tasarım laboratuvarındaki planınız
gpu-split-lab-none = Önce Tasarım görünümünü açıp bir bölme seçin; sonra burada çalıştırılabilir.
gpu-split-lab-is = { $tp } GPU'da planınız: { $splits } (tasarım laboratuvarının senaryosu, her işlem kendi çekirdekleriyle)
gpu-failed = GPU çalıştırması başarısız: { $error }
gpu-on = { $label }, { $devices } üzerinde
gpu-iteration = İleri + geri: { $ms } ms (medyan yineleme).
gpu-against = CPU referansına karşı: { $result }
gpu-measured = GPU'da ölçülen (CUDA olayları)
gpu-predicted = Öngörülen
gpu-per-op = İşlem başına (ms, katmanlar üzerinden toplam, rank'ler üzerinden ortalama); oran = ölçülen pay / öngörülen pay:
gpu-col-measured = ölçülen ms
gpu-col-predicted = öngörülen ms
gpu-col-ratio = oran
gpu-lib-driver = CUDA sürücüsü
gpu-need-driver = GPU'daki her şey
gpu-need-nvrtc = tplab'in çekirdeklerini çalışma anında derlemek
gpu-need-cublas = matris çarpımları
gpu-need-nccl = iki ya da daha çok GPU arasında all-reduce
gpu-get-driver = NVIDIA sürücüsünü kurun (libcuda.so.1'i o sağlar); konteynerde çalışıyorsanız GPU'yu konteynere açın (örneğin `docker run --gpus all`)
gpu-get-nvrtc = CUDA araç setinin NVRTC'sini (libnvrtc.so.13) kurun ya da `pip install nvidia-cuda-nvrtc` çalıştırıp nvidia/cu13/lib dizinini LD_LIBRARY_PATH'e ekleyin
gpu-get-cublas = CUDA araç setinin cuBLAS'ını (libcublas.so.13) kurun ya da `pip install nvidia-cublas` çalıştırıp lib dizinini LD_LIBRARY_PATH'e ekleyin
gpu-get-nccl = NCCL'i kurun (`apt install libnccl2` ya da `pip install nvidia-nccl-cu13`); yalnızca iki ya da daha çok GPU üzerindeki çalıştırmalar için gerekir
gpu-advice-not-found = yükleyicinin arama yolunda (LD_LIBRARY_PATH ve sistemin dizinleri) bulunamadı; { $how }
gpu-advice-versioned = yalnızca { $found } olarak var, ama cudarc { $looked } arıyor: yanına { $symlink } adında bir sembolik bağ oluşturun (LD_LIBRARY_PATH'teki bir dizinde) ya da LD_LIBRARY_PATH'i yükleyici bu adlardan birini bulacak şekilde ayarlayın
gpu-advice-lacks = { $file } yükleniyor ama içinde { $symbol } yok: ya eksiksiz bir { $library } kütüphanesi değil ya da tplab'in cudarc derlemesinin beklediği CUDA 13.0'dan eski
gpu-advice-fails = kütüphane yükleniyor ama çalışmıyor: { $error }; tplab'in cudarc derlemesinin beklediği CUDA 13.0'dan eski olabilir
gpu-lib-advice = { $library } (aranan: { $looked }): { $advice }
gpu-lib-fix = { $library }: { $fix }
gpu-details = Ayrıntılar: aranan dosyalar
gpu-problem-not-compiled = tplab CUDA desteği olmadan derlenmiş (tplab-kernels'in `cuda` özelliği kapalı); varsayılan özelliklerle yeniden derleyin: `cargo build --release`
gpu-problem-missing = { $library } ({ $file }) eksik
gpu-problem-broken = { $library } bozuk: { $file } yükleniyor ama içinde { $symbol } yok
gpu-problem-failing = { $library } yükleniyor ama çalışmıyor: { $error }
gpu-problem-unlisted = sürücü yükleniyor ama cihazlar listelenemiyor: { $error }
gpu-problem-no-device = görünen bir CUDA cihazı yok (`nvidia-smi` çıktısına ve CUDA_VISIBLE_DEVICES'a bakın)
gpu-ready = hazır: { $count } cihaz: { $names }
gpu-unavailable = kullanılamıyor: { $problem }
gpu-unavailable-missing = kullanılamıyor: bu makinede { $missing } eksik, bu yüzden GPU'da çalıştırma kapalı; yukarıdaki her satır birinin nasıl kurulacağını söylüyor.
gpu-unknown-reason = bilinmeyen bir neden
gpu-device = GPU { $ordinal }: { $name } — hesaplama yeteneği { $cc }, toplam { $total } GiB, { $free } GiB boş
gpu-stage-compile = çekirdekler derleniyor, parçalar yükleniyor
gpu-stage-warm-up = ısınma turu bitti
gpu-stage-timed = ölçülen yineleme
gpu-stage-done = bitti
gpu-stage-reference = CPU referansı hesaplanıyor
gpu-mode-streams = { $devices } — tek cihaz (GPU 0), CUDA akışları olarak { $ranks } rank
gpu-tol-16bit = { $dtype }: yaklaşık 12 işlem sınırında 8 mantis bitine yuvarlama (her biri 2^-9, rastgele yürüyüş gibi birikir), f32 toplama ile; LayerNorm ve softmax geri yayılımı bunu büyütür, ×√katman sayısı
pg-controls = Senaryo: boyutlar, TP, veri tipi, algoritma
st-identity = birim işlem
presenter-view = görünüm

## Collectives and Planner (helper A's views: their headings and controls).
cl-title = Kolektifler: bir all-reduce veriyi nasıl taşır
cl-algorithm = algoritma{ " " }
cl-gpus = GPU
cl-follow = Senaryonun TP'sini izle
cl-previous = Önceki tur
cl-next = Sonraki tur
cl-round = tur
cl-done = bitti: her GPU tam toplamı tutuyor
cl-round-line = Tur { $k } / { $rounds } · { $phase } · oklar bu turun yoldaki mesajlarıdır; her hücre bir GPU'nun mesajlar gelmeden önce tuttuğunu gösterir (yan yana rakamlar: o GPU'ların verisinin kısmi toplamı)
cl-round-before = 1. turdan önce · oklar 1. turun çıkmak üzere olan mesajlarıdır; her GPU yalnızca kendi verisini tutar (her parçada kendi rakamı)
cl-round-line-after = Tur { $k } / { $rounds } · { $phase } · oklar bu turun mesajlarıdır; hücreler mesajlardan sonraki hâliyle (yan yana rakamlar: o GPU'ların verisinin kısmi toplamı)
pl-title = Planlayıcı: bir model için kümede 3B yerleşimler
vf-bound = { $dtype } ε={ $eps } × √K (K={ $k }: en uzun toplama, yani gizli boyut, ffn ya da bir gradyanın üzerinden toplandığı token'lar; yuvarlama hataları rastgele yürüyüş gibi birikir) × derinlik (katman+1)={ $depth } × 16 (iki yürütücü × λ=4 × Σ|ab|/|Σab|) × max(1, κ)={ $kappa } (LayerNorm koşullanması κ = max rms(x)/σ(x); yalnızca bir satırın öznitelikleri neredeyse eşitken büyür, küçük gizli boyutlarda olduğu gibi): bölme her satır paralel toplamın sırasını değiştirir, bu yüzden sonuçlar yalnızca yuvarlama kadar farklıdır

## Design: the learner shards the block.
view-design = Tasarım
design-title = Tasarım: katmanı kendiniz bölün
design-free = Serbest tasarım
design-challenge = Görev
design-free-intro = Bir matrisin nasıl bölüneceğini seçmek için üzerine tıklayın: her GPU'da tamamı, sütunları ya da satırları. Kurallar bölmenin gerektirdiği kolektifleri yerleştirir, programı sanal GPU'larda bölünmemiş referansa karşı çalıştırır ve maliyetini Megatron-LM'in bölmesinin yanında gösterir.
design-click = Nasıl bölüneceğini seçmek için bir matrise (kareli bir kutuya) tıklayın: her GPU'da tamamı, sütunları ya da satırları; sonra planınızı denetleyin.
design-click-plus = İki işlem arasındaki "+" oraya bir kolektif yerleştirir (burada kolektifler elle yerleştirilir, bölmeler sabittir); kaldırmak için yerleştirilmiş olana tıklayın; sonra planınızı denetleyin.
design-walk = Planımı adım adım izle
design-walk-hint = Adım adım görünümünü bu planla açar: ileri ve geri geçişin her işlemi ve kolektifi, GPU GPU.
design-walk-refused = Bu plan reddedildi: yalnızca her işlemin okuyabildiği bir program adım adım izlenebilir. Önce düzeltin.
design-gpus = GPU'lar:
design-tp = TP={ $n }
design-solved-count = { $total } görevden { $solved } tanesi çözüldü
design-hint = İpucunu göster
design-hint-cost = Üçüncü yıldız ipucu kullanmadan çözmek içindir.
design-hint-text = İpucu: { $hint }
design-check = Planımı denetle
design-restart = Baştan başla
design-next = Sonraki görev
design-stars-rule = Çözmek bir yıldız, en ucuz plan bir yıldız, ipucusuz ve ilk denetimde çözmek bir yıldız.
design-stars-short = ☆ her biri için bir tane: çözmek · en ucuz plan · ilk denetim, ipucusuz
design-missed-cheaper = En ucuz plan değil: bunu çözen başka bir bölme GPU başına daha az bayt gönderir (ikinci yıldız).
design-missed-hint = İpucu gösterildi (üçüncü yıldız ipucusuz çözmek içindir).
design-missed-earlier-check = Bu görevin daha önceki bir denetimi geçmedi (üçüncü yıldız ilk denetim içindir).
design-solved = Çözüldü { $stars }
design-why = Neden: { $why }
design-saved = { $name } adlı öğrencinin sınav ilerlemesiyle kaydedildi.
design-not-yet = Henüz değil:
design-name = Yıldızlarınızın sınav ilerlemenizle saklanması için adınız:
design-block = Sizin katmanınız
design-click-matrix = Bir matrise tıklayınca bölmesi sırayla değişir: tamamı, sonra sütunları, sonra satırları. Kolektifler bölmenin gerektirdiği yerde belirir; nedenini görmek için birinin üzerine gelin.
design-nothing-here = burada hiçbir şey yok
design-slice = kendi dilimini al (ücretsiz)
design-slice-why = Her GPU tamamını tuttuğu bir tensörden kendi parçasını alır: iletişim yok.
design-collective-why = { $tensor }: önce { $from }, sonra { $to }
design-click-remove = Kaldırmak için tıklayın.
design-unplaced = { $kind } (burada yapacak işi yok)
design-add-here = { $op } sonrasına bir kolektif yerleştir
design-sp = Dizi paralelliği (artık akış token'lara göre bölünür)
design-sp-short = Dizi paralelliği
design-by-hand = Kolektifleri ben yerleştireyim
design-by-hand-hint = Kuralların yerleştirdiklerinden başlar; birini kaldırın ya da bir işlemin ardındaki + ile ekleyin.
design-fixes = Düzeltmeler:
design-fixes-held = Önce kendiniz deneyin: iki işlem arasındaki "+" oraya bir kolektif yerleştirir. Düzeltmeler ipucuyla birlikte gelir.
design-fixes-show = İpucunu ve düzeltmeleri göster
design-run-anyway = Yine de çalıştır ve yanlışı gör
design-cycle = Bölmeyi değiştirmek için tıklayın: tamamı, sonra sütunları, sonra satırları
design-fixed-weight = Bu görev bu matrisi olduğu gibi bırakır.
design-costs = Maliyeti ve doğruluğu
design-equal = ✔ Bölünmemiş referansla eşit (en büyük bağıl hata { $error }, tolerans { $tol })
design-equal-goal-open = Bölünmemiş referansla eşit (en büyük bağıl hata { $error }, tolerans { $tol }): sayılar doğru. Bölmenin görevin hedefini karşılayıp karşılamadığını görmek için planınızı denetleyin.
design-equal-goal-missed = Bölünmemiş referansla eşit (en büyük bağıl hata { $error }, tolerans { $tol }): sayılar doğru, ama bölme görevin hedefini henüz karşılamıyor (denetim neyin eksik olduğunu söylüyor).
design-differs = ✖ Referanstan farklı: en büyük bağıl hata { $error } (tolerans { $tol })
design-refused = ✖ Reddedildi: bir işlem bir tensörü kullanamayacağı biçimde okuyor (soldaki kurala bakın)
design-refused-above = ✖ Reddedildi: bir işlem bir tensörü kullanamayacağı biçimde okuyor (yukarıdaki kurala bakın)
design-tensors = { $total } çıktı ve gradyandan { $passed } tanesi referansla eşit
design-none = yok
design-forward = İleri geçişteki kolektifler
design-backward = Geri geçişteki kolektifler
design-bytes = Her GPU'nun katman başına gönderdiği
design-vs-megatron = (Megatron'un tüm katmanı bölmesinin gönderdiğinin { $x }×'i)
design-vs-megatron-refused = (yerleştirildiği gibi: reddedilen bir plan bir kuralı çiğner, bu yüzden baytları Megatron'un bölmesiyle karşılaştırılamaz)
design-weights = GPU başına ağırlıklar
design-of-whole = { $whole } içinden { $have }
design-activations = GPU başına saklanan aktivasyonlar
design-layer = Gizli boyutu { $hidden }, { $heads } sorgu kafası, { $kv } KV kafası ve { $tokens } token'ı olan bir katmanda, { $tp } GPU ile, { $bits } bitlik kayan noktalı sayılarla (sayı başına { $bytes } bayt: buradaki bayt sayıları bunlarla) denetlendi; diğer görünümlerin senaryosu değil, kendine ait küçük bir katman.
design-lanes = Her işlemden sonra her GPU'nun tuttuğu
design-lanes-key = dolu: tam bir kopya · dikey çizgiler: kendi sütunları · yatay çizgiler: kendi token'ları · soluk ve Σ: bir kısmi toplam · harften önce bir eşkenar dörtgen: bir kolektiften sonraki tensör · kırmızı ve çerçeveli: bir GPU onu olmadığı bir şey olarak kullanıyor (planın çiğnediği kural)
design-holds = GPU { $gpu }, { $tensor } tensörünün şunu tutar: { $what }
design-misread = Olmadığı bir şeymiş gibi okunuyor: bu işlemden önce yerleştirilen hiçbir şey onu işlemin ihtiyaç duyduğu hâle getirmiyor (çalıştırma öyleymiş gibi sürüyor).
design-op-ln1 = LayerNorm 1
design-op-ln2 = LayerNorm 2
design-op-attention = dikkat
design-op-bias = + bias
design-op-bias-once = + bias (bir kez, GPU 0'da)
design-op-residual = + artık bağlantı
design-op-residual-out = + artık bağlantı = çıktı
design-w-qkv = QKV projeksiyonu
design-w-out = çıkış projeksiyonu
design-w-fc1 = fc1
design-w-fc2 = fc2
design-split-whole = tamamı
design-split-columns = sütunları
design-split-rows = satırları
design-place-whole = tensörün tamamı
design-place-tokens = kendi token'ları
design-place-columns = kendi sütunları
design-place-partial = bir kısmi toplam
design-rule-gelu-partial = GPU { $gpu } üzerindeki GeLU, { $tensor } tensörünün bir kısmi toplamını okuyor: GeLU(a)+GeLU(b) ≠ GeLU(a+b), bu yüzden GeLU toplamın tamamına ihtiyaç duyar.
design-rule-attention-partial = GPU { $gpu } üzerindeki dikkat, { $tensor } tensörünün bir kısmi toplamını okuyor: softmax doğrusal değildir, bu yüzden dikkat toplamın tamamına ihtiyaç duyar.
design-rule-attention-tokens = GPU { $gpu } üzerindeki dikkat, { $tensor } tensörünün yalnızca kendi token'larını okuyor: her token dizisindeki önceki tüm token'lara bakar, bu yüzden dikkat kafalarının tüm token'larına ihtiyaç duyar.
design-rule-norm-partial = GPU { $gpu } üzerindeki LayerNorm, { $tensor } tensörünün bir kısmi toplamını okuyor: bir toplamın ortalaması ve varyansı, ortalamaların ve varyansların toplamı değildir.
design-rule-norm-columns = GPU { $gpu } üzerindeki LayerNorm, { $tensor } tensörünün yalnızca kendi sütunlarını okuyor: her token'ın ortalaması ve varyansı tüm özniteliklerinin üzerinden hesaplanır, bu yüzden LayerNorm satırların tamamına ihtiyaç duyar.
design-rule-columns-need-whole = GPU { $gpu } üzerindeki { $weight }, { $tensor } tensöründen şunu okuyor: { $holds }; ama sütunlarına göre bölünmüş: her GPU girişin tamamını kendi sütunlarıyla çarpar.
design-rule-rows-need-columns = GPU { $gpu } üzerindeki { $weight }, { $tensor } tensöründen şunu okuyor: { $holds }; ama satırlarına göre bölünmüş: her GPU girişin kendi sütunlarını kendi satırlarıyla çarpar, bu yüzden tam olarak o sütunlara ihtiyaç duyar.
design-rule-whole-needs-rows = GPU { $gpu } üzerindeki { $weight }, { $tensor } tensörünün yalnızca kendi sütunlarını okuyor ama bölünmemiş: bölünmemiş bir ağırlık girişinin satırlarının tamamını çarpar.
design-rule-residual-partial = GPU { $gpu } üzerindeki artık toplama { $tensor } tensörünün bir kısmi toplamını okuyor, oysa artık akış { $stream } olarak tutuluyor: her GPU'nun kısmi toplamını akışın kendi kopyasına eklemek toplamı vermez. Önce { $tensor } tensörünü toplayın.
design-rule-residual-mismatch = GPU { $gpu } üzerindeki artık toplama { $tensor } tensöründen şunu okuyor: { $holds }; oysa artık akış { $stream } olarak tutuluyor. İki tarafın da aynı biçimde tutulması gerekir.
design-rule-nothing-to-do = { $op } sonrasındaki { $kind } işlemi boşa çalışır: her GPU { $tensor } tensöründen şunu tutuyor: { $holds }.
design-rule-other = GPU { $gpu } üzerindeki bir işlem, { $tensor } tensöründen şunu okuyamaz: { $holds }.
design-fix-collective = { $op } sonrasına { $kind } (GPU başına { $bytes }); okunan: { $to }
design-fix-split = { $weight } matrisini şöyle böl: { $split }
design-fix-remove = { $op } sonrasındaki { $kind } işlemini kaldır
design-miss-refused = kurallar programı reddediyor (katmanınızın altındaki kurala bakın)
design-miss-differs = sayıları referanstan farklı
design-miss-count = ileri geçişinde { $ar } all-reduce ve { $others } başka kolektif var; hedef { $goalar } all-reduce ve { $goalothers } başka kolektif
design-miss-cheap = en iyi bölmenin { $have } katı bayt gönderiyor; hedef en az { $want } katı
design-miss-by-hand = kolektifleri kendiniz yerleştirin (“Kolektifleri ben yerleştireyim” kutusunu işaretleyin)
design-miss-elsewhere = program reddediliyor ama hedefin istediği yerde değil
design-miss-not-refused = program geçerli: henüz hiçbir işlem bir kısmi toplam okumuyor
design-miss-run-anyway = Şimdi reddedilen programı yine de çalıştırma kutusunu işaretleyin ve sayıların referanstan ne kadar uzak olduğunu görün.
design-miss-sp = dizi paralelliğini açın
design-miss-still-ar = ileri geçişinde hâlâ { $n } all-reduce var
design-miss-whole = her ağırlığı bölün: her GPU'da bölünmemiş bir ağırlık tensör paralelliği değildir
design-ch-mlp-one-all-reduce-title = 2 GPU'da tek all-reduce ile MLP
design-ch-mlp-one-all-reduce-goal = fc1 ve fc2'yi, MLP'nin ileri geçişi tek bir all-reduce gerektirecek biçimde bölün.
design-ch-mlp-one-all-reduce-hint = GeLU değer değer çalışır: her GPU A'nın bazı sütunlarının değerlerini tam olarak tutuyorsa diğerlerinden hiçbir şeye ihtiyacı yoktur.
design-ch-mlp-one-all-reduce-why = fc1 sütunlarına göre bölününce her GPU A'nın bazı sütunlarını tam olarak tutar, GeLU yerel çalışır; fc2 satırlarına göre bölününce tam o sütunları çarpar ve kısmi toplamlar bırakır, bunlar bir kez toplanır. Diğer her bölme 4h genişliğindeki A'yı toplar ya da bütün bir tensörü toplar.
design-ch-attention-one-all-reduce-title = 4 GPU'da tek all-reduce ile dikkat
design-ch-attention-one-all-reduce-goal = QKV ve çıkış projeksiyonlarını, dikkatin ileri geçişi tek bir all-reduce gerektirecek biçimde bölün.
design-ch-attention-one-all-reduce-hint = Kafalar birbirine bakmaz: bir kafanın Q, K ve V'sini tutan GPU o kafayı tek başına çalıştırabilir.
design-ch-attention-one-all-reduce-why = QKV sütunlarına göre bölününce her GPU kafaların tamamını tutar ve dikkat kafa kafa çalışır; çıkış projeksiyonu satırlarına göre bölününce her GPU kendi kafalarının bağlamını eşleşen satırlarla çarpar ve kısmi toplamlar bırakır, bunlar bir kez toplanır.
design-ch-layer-two-all-reduces-title = İleri geçişte iki all-reduce ile bütün bir katman
design-ch-layer-two-all-reduces-goal = Dört ağırlığı da, katmanın ileri geçişi tam olarak iki all-reduce gerektirecek biçimde bölün.
design-ch-layer-two-all-reduces-hint = Dikkat için de MLP'de yaptığınızı yapın: önce sütunlara göre bir bölme, sonra satırlara göre bir bölme.
design-ch-layer-two-all-reduces-why = Bu Megatron-LM'in bölmesidir: her yarı sütun paralel bir katman, yerel bir işlem ve satır paralel bir katmandır, bu yüzden her yarı kısmi sonuçlarını bir kez, satır paralel katmanından sonraki bir all-reduce ile toplar (Megatron buna g der). Geri geçişte toplamlar girişlere taşınır: her yarının giriş gradyanı, sütun paralel katmanından önce bir all-reduce ile toplanır (adı f), iki tane daha.
design-ch-mlp-correct-but-costly-title = Doğru ama dört kat trafik
design-ch-mlp-correct-but-costly-goal = Referansla hâlâ eşit olan ama her GPU'ya en iyi MLP bölmesinin en az 3 katı bayt gönderten bir MLP bölmesi bulun.
design-ch-mlp-correct-but-costly-hint = Önce satır bölmesini, sonra sütun bölmesini deneyin.
design-ch-mlp-correct-but-costly-why = fc1 satırlarına göre bölününce 4h genişliğindeki A'nın kısmi toplamları kalır ve GeLU tam değerlere ihtiyaç duyar: toplama artık dört kat geniş bir tensörü taşır, fc2 sütunlarına göre bölününce de artık toplamanın birleştirmesi gereken dilimler kalır. Sayılar aynı, baytlar yaklaşık 4,5 kat: bölme boyutlarını seçmek işin ta kendisidir.
design-ch-gelu-of-a-partial-sum-title = GeLU'ya bir kısmi toplam okutun
design-ch-gelu-of-a-partial-sum-goal = Kolektifleri kendiniz yerleştirin ve fc1'i, GeLU'ya bir kısmi toplam verilecek biçimde bölün; sonra yine de çalıştırın ve neyin bozulduğunu görün.
design-ch-gelu-of-a-partial-sum-hint = fc1'i satırlarına göre bölün ve fc1 ile GeLU arasına hiçbir kolektif koymayın.
design-ch-gelu-of-a-partial-sum-why = GeLU(a)+GeLU(b) ≠ GeLU(a+b): bir kısmi toplamın doğrusal olmayan bir fonksiyonu hiçbir şeyin kısmi toplamı değildir. Motor programı reddeder; yine de çalıştırılırsa çıktıları referanstan çok uzaktır.
design-ch-sequence-parallel-no-all-reduce-title = Dizi paralelliği: hiç all-reduce yok
design-ch-sequence-parallel-no-all-reduce-goal = Dizi paralelliği açıkken katmanı, ileri geçişinde hiç all-reduce olmayacak biçimde bölün.
design-ch-sequence-parallel-no-all-reduce-hint = Bir all-reduce, bir reduce-scatter ile ardından gelen bir all-gather'dır; aralarında artık akışı token'lara göre bölünmüş tutun.
design-ch-sequence-parallel-no-all-reduce-why = Megatron'un bölmesi ve token'lara göre bölünmüş artık akışla her g bir reduce-scatter olur (her GPU toplamın kendi token'larını tutar) ve her f bir all-gather: iki all-reduce ile aynı bayt, üstelik LayerNorm, bias ve artık toplama token'ların dörtte birinde çalışır.
design-ch-gqa-more-gpus-than-kv-heads-title = KV kafasından çok GPU ile gruplanmış sorgu dikkati
design-ch-gqa-more-gpus-than-kv-heads-goal = 8 sorgu kafası 2 KV kafasını paylaşıyor; katmanı 4 GPU'ya, ileri geçişte iki all-reduce olacak biçimde bölün.
design-ch-gqa-more-gpus-than-kv-heads-hint = Megatron'un bölmesi yine çalışır: bir sorgu kafasını tutan GPU'nun o kafanın KV kafasının bir kopyasına ihtiyacı vardır.
design-ch-gqa-more-gpus-than-kv-heads-why = Her GPU 2 sorgu kafası ve onların okuduğu KV kafasının bir kopyasını tutar (vLLM'in kuralı), böylece dikkat yerel kalır; kopyaların K ve V gradyanları yalnızca kendi sorgu kafalarını kapsar, bu yüzden geri geçişte her kopya çifti bunları toplar.
design-ch-repair-missing-g-title = Bozuk bir programı onarın
design-ch-repair-missing-g-goal = Kolektifleri elle yerleştirilmiş bu program bir kolektifi unutmuş. Eksik olanı ekleyin ki referansla eşit olsun.
design-ch-repair-missing-g-hint = fc2'nin çıktısını izleyin: artık toplama onu okurken her GPU ne tutuyor?
design-ch-repair-missing-g-why = fc2 satırlarına göre bölününce her GPU'da bir kısmi toplam kalır ve bir kısmi toplamı her GPU'nun artık akış kopyasına eklemek akışı GPU başına bir kez sayar: önce toplam (g, bir all-reduce) gelmelidir.

## The walkthrough's predictions.
walk-predict-toggle = Önce tahmin et
walk-predict-toggle-hint = İlk katmandaki her kolektiften önce ve ilk geri geçiş adımında ne olacağını söyleyin; adım cevabınızdan sonra oynar.
walk-predict-again = Tahminleri yeniden sor
walk-predict-again-hint = Bu gezintinin cevaplarını unutur ve ilk adıma döner: her tahmin yeniden sorulur (bir provadan sonra sınıf için).
walk-predict-holds = Tahmin edin: bu { $kind } işleminden sonra GPU { $gpu }, { $tensor } tensörünün neyini tutacak?
walk-predict-bytes = Tahmin edin: halka olarak çalışan bu { $kind } işleminde { $n } GPU'nun her biri kaç bayt gönderecek?
walk-predict-which = Tahmin edin: bu katmanda geriye doğru giderken bunlardan hangisi GPU'ların haberleşmesini gerektirir?
walk-predict-own-partial = yalnızca kendi kısmi toplamını, değişmeden
walk-predict-its-tokens = toplamı, ama yalnızca kendi token'larını (satırlarını)
walk-predict-whole-sum = toplamın tamamını, her GPU'da aynı
walk-predict-joined = tensörün tamamını, her GPU'nun diliminden birleştirilmiş
walk-predict-reveal = Cevabı göster (sağ ok tuşu)
walk-predict-skip = Şimdilik geç (katmanın sonunda yeniden sorulur)
walk-predict-wait = Adım, siz cevap verince ya da geçince oynar.
walk-predict-wait-presenter = Sınıf yüksek sesle (ya da el kaldırarak) cevap verir; sağ ok tuşu cevabı gösterir ve adım oynamaya başlar, her basışta bir tur.
walk-predict-right = ✔ Doğru: { $answer }
walk-predict-wrong = ✖ Tam değil: cevap { $answer }. { $lesson }
walk-predict-answer = Cevap: { $answer }
walk-predict-tally = { $total } tahminden { $right } tanesi doğru.
walk-predict-lesson-fg = Ders 6 (f ve g operatörleri) her kolektifin her GPU'da ne bıraktığını açıklar.
walk-predict-lesson-ring = Ders 7 (all-reduce nasıl çalışır) her GPU'nun gönderdiği baytları sayar.

# --- Kod değil, sözcükler (konu 22, madde 6) ---
preset-gpt2-small = GPT-2 small
preset-tiny = minik katman
alg-ring = halka
alg-recursive-halving-doubling = özyinelemeli yarılama ve ikiye katlama
alg-tree = ağaç
alg-direct = doğrudan
phase-reduce-scatter = reduce-scatter
phase-all-gather = all-gather
phase-reduce = tek GPU'da toplama
phase-broadcast = ondan herkese dağıtma
phase-fold-in = içe katlama
phase-fold-out = dışa açma
phase-direct = doğrudan değiş tokuş
cl-chunks-a11y = { $k }. turdan sonra parçalar: { $held }
cl-round-a11y = Tur { $k } / { $rounds }. Bu turda gönderilen: { $sends }. Her GPU'nun ondan önce tuttuğu: { $held }
st-lanes-moving = { $tp } GPU veri alışverişinde: { $op }
st-lanes-running = { $tp } GPU çalışıyor: { $op }
sm-layers = { $n } katman
sm-kv = { $n } KV kafası
sm-sp = dizi paralelliği
sm-algorithm = { $algorithm } algoritmasıyla all-reduce
sm-gpus = { $n } GPU
sm-per-node = düğüm başına { $n }
sm-event = { $pass }: "{ $op }"
pr-layer = gizli boyutu { $hidden }, { $heads } kafalı, FFN genişliği { $ffn } olan { $tokens } token'lık bir katmanın
pg-heads-why = Neden: { $heads } kafa { $tp } GPU'ya bölününce her birine { $each } tam kafa düşer ve { $over } kafa artar (? ile işaretli): bir kafanın Q, K ve V sütunları kesilemediği için her GPU aynı sayıda tam kafa tutmalıdır.
pg-heads-a11y = GPU'ya göre renklendirilmiş { $heads } kafa: GPU başına { $each }, { $over } kafa artıyor
pg-heads-fix = { $size } boyutlu { $heads } kafa kullan ({ $tp } GPU'ya bölünür: tek düğüm)
st-strip-bias-residual = bias + artık
st-ring-caption = { $algorithm }: tur { $k }/{ $rounds } ({ $phase })
st-gpu-box = { $op }, çıktı [{ $rows }, { $cols }]
beside-label = yan yana
beside-nothing = yok
beside-tp = TP = { $tp }
beside-megatron = Megatron'un bölmesi
beside-megatron-on = { $tp } GPU'da Megatron'un bölmesi
beside-this = Bu senaryo: TP = { $tp }
beside-your-plan = { $tp } GPU'da sizin planınız
beside-no-step = Burada bu adımın karşılığı yok: hâlâ kendi { $k }. adımında.
beside-sent = Bu adımın sonunda her GPU toplam { $bytes } göndermiş olur.
beside-holds = Her GPU her ağırlık matrisinin { $share } kadarını tutar ve katman başına ileri ve geri { $bytes } gönderir.
beside-holds-one = Tek GPU her matrisi bütün olarak tutar ve hiçbir şey göndermez.
beside-error = Çizilemiyor: { $error }

## Bir tahminin cevabı neden doğru (adımdan hesaplanır).
walk-why-all-reduce = All-reduce (toplama ve dağıtma), { $n } GPU'nun kısmi toplamlarını toplar ve toplamın tamamını her GPU'ya verir: GPU { $gpu } artık { $tensor } tensörünün tamamını tutar; her sayı { $n } terimin toplamıdır.
walk-why-reduce-scatter = Reduce-scatter (toplama ve bölme), { $n } kısmi toplamı toplar ama her GPU'da yalnızca bir dilim bırakır: GPU { $gpu }, { $tensor } tensörünün token'larının kendi 1/{ $n } payını toplanmış olarak tutar.
walk-why-all-gather = All-gather (toplayıp birleştirme), { $n } GPU'nun dilimlerini birleştirir: GPU { $gpu } artık { $tensor } tensörünün tamamını tutar; { $n } dilimden bir araya getirilmiştir.
walk-why-which = Geriye giderken iletişim kuran g değil, f'dir: f ileri geçişte birim dönüşümdü, bu yüzden geri geçişi bir all-reduce'tur. Her GPU'nun bir sonraki matristeki dilimi, aynı tam girişin kısmi bir gradyanını verir; bunlar toplanmalıdır. g'nin geri geçişi birim dönüşümdür: tam bir kopyanın gradyanı her GPU'da zaten tamdır. Burada bu, { $op }.
walk-why-bytes-ring = Halkada her GPU yükün { $factor }×({ $n1 }/{ $n }) kadarını gönderir: { $factor } × { $n1 }/{ $n } × { $payload } = { $sent }. Yarısı kısmi toplamlar toplanırken (reduce-scatter), yarısı toplamlar dağıtılırken (all-gather).
walk-why-bytes-half = Her GPU yükün { $n1 }/{ $n } kadarını gönderir: { $n1 }/{ $n } × { $payload } = { $sent }: kendi parçası dışındaki her parçayı bir kez.
walk-why-bytes-other = Bu algoritmanın planıyla her GPU, { $payload } yükün { $sent } kadarını gönderir ({ $n } GPU).
walk-predict-nudge = Önce soruyu cevaplayın ya da atlayın: ilerlemek (ok tuşu ya da Sonraki adım) sizin yerinize cevap vermez.
walk-skipped-back = Bu katmanda { $count } soruyu atladınız.
walk-end = Gezintinin sonu: ileri ve geri geçişin her işlemi ve her kolektifi oynadı. Home tuşu (ya da baştan başlatan düğme) ilk adıma döner; "yanında" bu gezintinin yanında başka bir TP oynatır.
walk-skipped-ask = Şimdi sor
walk-round-caption = Tur { $k } / { $rounds }: { $phase }, hücreler mesajlarından sonraki hâliyle
walk-round-key = Her GPU bir satır, her parça bir kutu: rakamlar bir parçanın şimdiye kadar kimlerin sayılarını tuttuğunu söyler (Σ: hepsininkini); ok, bu turda gönderilen bir parçadır.
walk-round-none = Birim dönüşüm: bu adımda GPU'lar arasında hiçbir şey taşınmaz.
design-copy-file = Planımı kopyala
design-copy-file-hint = Planı bir plan dosyası olarak kopyalar: PLAN.toml dosyasına yapıştırıp tplab design --file PLAN.toml çalıştırın ya da buraya geri yapıştırın.
design-copy-flags = tplab komutu olarak kopyala
design-copy-flags-manual = Elle yerleştirilmiş kolektifler için plan dosyası gerekir: "Planımı kopyala"yı kullanın.
design-paste = Bir plan yapıştırın:
design-paste-hint = "Planımı kopyala" ya da "tplab komutu olarak kopyala" ile kopyalanmış bir plan
design-paste-use = Bu planı kullan
design-stars-spoken = 3 yıldızdan { $n }
design-copy-flags-hint = Planı, terminalde çalıştırılacak bir tplab design komut satırı olarak kopyalar.

# Tensörler sözcüklerle (widgets/words.rs): her harfin anlamı ve bir GPU'nun tuttuğu parça.
tensor-x = katmanın girişi
tensor-h1 = LayerNorm 1'in çıktısı
tensor-qkv = sorgular, anahtarlar ve değerler
tensor-ctx = dikkatin çıktısı, kafalar yan yana
tensor-z = çıkış projeksiyonunun çıktısı, artık toplamadan önce
tensor-x1 = dikkatten sonraki artık akış
tensor-h2 = LayerNorm 2'nin çıktısı
tensor-a = fc1'in çıktısı, GeLU'dan önce
tensor-u = GeLU'nun çıktısı
tensor-m = MLP'nin çıktısı, artık toplamadan önce
tensor-y = katmanın çıktısı
tensor-grad = { $of } için gradyan
tensor-kv-grad = QKV ağırlığının K ve V sütunlarının gradyanı
tensor-ln1-weight = LayerNorm 1'in ölçeği
tensor-ln1-bias = LayerNorm 1'in kayması
tensor-qkv-weight = sorguları, anahtarları ve değerleri üreten ağırlık
tensor-qkv-bias = sorguların, anahtarların ve değerlerin bias'ı
tensor-out-weight = çıkış projeksiyonunun ağırlığı
tensor-out-bias = çıkış projeksiyonunun bias'ı
tensor-ln2-weight = LayerNorm 2'nin ölçeği
tensor-ln2-bias = LayerNorm 2'nin kayması
tensor-fc1-weight = fc1'in ağırlığı
tensor-fc1-bias = fc1'in bias'ı
tensor-fc2-weight = fc2'nin ağırlığı
tensor-fc2-bias = fc2'nin bias'ı
slice-heads-qkv = Q, K ve V'nin { $range } numaralı kafaları
slice-heads-gqa = { $range } numaralı sorgu kafaları, { $kv } numaralı KV kafaları
slice-heads = { $range } numaralı kafalar
slice-head-rows = { $range } numaralı kafaların satırları
slice-tokens = token { $range }
slice-rows = satır { $range }
slice-columns = sütun { $range }
lanes-key = Harfler: { $legend }
design-lanes-column = { $op } sonrası: { $tensor }, { $meaning }
design-holds-after = { $op } sonrası: GPU { $gpu }, { $tensor } tensörünün şunu tutar: { $what }
# Adım şeridindeki kısa işlem adları.
st-strip-op-ln1 = LN 1
st-strip-op-qkv = QKV
st-strip-op-core = dikkat
st-strip-op-out = çıkış proj.
st-strip-op-ln2 = LN 2
st-strip-op-fc1 = fc1
st-strip-op-gelu = GeLU
st-strip-op-fc2 = fc2
st-strip-op-bias = bias
st-strip-op-grads = gradyanlar
cl-round-a11y-after = Tur { $k } / { $rounds }. Bu turda gönderilen: { $sends }. Her GPU'nun ondan sonra tuttuğu: { $held }
design-op-misread = olmadığı gibi okunur
walk-whynot-own-partial = Değişmemiş olması hiçbir şeyin taşınmadığı anlamına gelirdi: { $kind } her GPU'nun tuttuğunu değiştirmek için vardır.
walk-whynot-its-tokens = Toplamın yalnızca kendi token'ları (1/{ $n }'i) bir reduce-scatter'ın bıraktığıdır; bu { $kind } başka bir şey bırakır.
walk-whynot-whole-sum = Her GPU'da toplamın tamamı bir all-reduce'un bıraktığıdır; bu { $kind } başka bir şey bırakır.
walk-whynot-joined = GPU'ların dilimlerini yan yana birleştirmek bir all-gather'ın işidir; bir tensörün kısmi toplamları birleştirilmez, toplanır.
tr-table = Eğriler sayılarla (her adımda kayıp, TP başına)
walk-predict-now = Her GPU'nun şu an tuttuğu
walk-predict-size = { $tensor } { $dtype } türünde { $shape } boyutunda: GPU 0 bunun { $bytes } kadarını tutar.
layout-recompute-selective = seçici yeniden hesaplama
layout-recompute-full = tam yeniden hesaplama
pl-layout-key = TP, PP, DP: tensör, ardışık düzen ve veri paralel boyutları · b: mikro parti (bir GPU'nun aynı anda hesapladığı dizi sayısı) · SP: dizi paralelliği · ZeRO-1: optimize edici durumları DP'ye bölünür, ZeRO-2: gradyanlar da · v: dönüşümlü derinlik (bir GPU'nun tuttuğu model parçaları) · yeniden hesaplama: aktivasyonlar saklanmak yerine geri geçişte yeniden hesaplanır.
