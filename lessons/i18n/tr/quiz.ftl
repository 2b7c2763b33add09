## Kısa sınav kasasının sözleri: yazılan bir cevabın okunması, sertifika resmi ve üretilen
## sorular (gen:<tür>:<tohum>). Sayılar dilin yazdığı biçimde gelir.

## Yazılan bir cevabın okunması. $last gösterilen son seçeneğin harfi.
quiz-err-one-letter = A'dan { $last }'ye kadar tek bir harf yazın
quiz-err-letters = doğru olan her seçeneğin harfini yazın (A'dan { $last }'ye), örn. "A, C"
quiz-err-not-a-number = '{ $input }' bir sayı değil; rakamlarla yazın, örn. 589.824 ya da 589824, ya da 0,5 (ondalık virgül)
quiz-err-ordering = A'dan { $last }'ye kadar her harfi bir kez, doğru sırada yazın, örn. "C A B"
quiz-number-hint = ondalık işareti ",", binlikler isteğe bağlı "." ile ayrılır: 589.824 ya da 589824; 0,25

## Sertifika resmi. $score dilin yazdığı biçimde bir yüzde.
cert-pic-title = Başarı Sertifikası
cert-pic-course = Büyük Modeller için Tensör Paralelliği
cert-pic-certifies = Bu belge
cert-pic-passed = adlı kişinin tplab sınavını ({ $exam }) { $score } puanla geçtiğini onaylar
cert-pic-date = Tarih
cert-pic-signed = İmzalayan anahtar: { $key }
cert-pic-unsigned = İmzasız: bu resmi herkes yapabilirdi
cert-pic-verify = Doğrulamak için: tplab cert verify DOSYA --issuer ANAHTAR

## Üretilen sorular. Sözlerle bir model: $heads gen-heads-* iletilerinden biri.
gen-model-gpt = { $name } (gizli boyut { $hidden }, { $heads }, FFN { $ffn }, { $layers } katman)
gen-model-llama = { $name } (gizli boyut { $hidden }, { $heads }, FFN { $ffn }, { $layers } katman; SwiGLU MLP, RMSNorm, bias yok)
gen-heads-mqa = tek bir KV kafasını paylaşan { $heads } sorgu kafası (çoklu sorgu dikkati)
gen-heads-gqa = { $heads } sorgu kafası, { $kv } KV kafası
gen-heads-mha = { $heads } kafa
gen-unit-mib = MiB
gen-unit-kib = KiB

## Tasarım laboratuvarının görevleri (gen:design-split). $goal tasarım görünümünün
## design-ch-<id>-goal iletisi; bir plan ağırlıklarının bölmeleridir, "; " ile birleştirilir.
gen-weight-qkv = QKV projeksiyonu
gen-weight-out = çıkış projeksiyonu
gen-weight-fc1 = fc1
gen-weight-fc2 = fc2
gen-split-replicate = her GPU'da bölünmemiş
gen-split-columns = sütunlarına göre
gen-split-rows = satırlarına göre
gen-weight-split = { $weight } { $split }
gen-design-prompt = Tasarım laboratuvarı, görev { $stage } ({ $tp } GPU): { $goal } Hangi bölme bunu yapar? tplab her planı bölünmemiş referansa karşı çalıştırır ve kolektiflerini sayar.
gen-design-prompt-sp = Tasarım laboratuvarı, görev { $stage } ({ $tp } GPU): { $goal } Dizi paralelliği açık. Hangi bölme bunu yapar? tplab her planı bölünmemiş referansa karşı çalıştırır ve kolektiflerini sayar.
gen-miss-refused = Kurallar bu programı reddeder: bir işlem bir tensörü kullanamayacağı biçimde okur.
gen-miss-differs = Sayıları referanstan farklıdır.
gen-miss-count = İleri geçişinde { $ar } all-reduce ve { $others } başka kolektif var; hedef { $goalar } all-reduce ve { $goalothers } başka kolektif.
gen-miss-cheap = En iyi bölmenin yalnızca { $have } katı bayt gönderir; hedef en az { $want } katı.
gen-miss-by-hand = Kolektifler elle yerleştirilmelidir.
gen-miss-elsewhere = Program reddedilir ama hedefin istediği yerde değil.
gen-miss-not-refused = Program geçerlidir: hiçbir işlem bir kısmi toplam okumaz.
gen-miss-run-anyway = Henüz yine de çalıştırılmadı: reddedilen programı çalıştırın ve referanstan ne kadar uzak olduğunu görün.
gen-miss-sp = Dizi paralelliği kapalı.
gen-miss-still = İleri geçişinde hâlâ { $n } all-reduce var.
gen-miss-whole = Bir ağırlık her GPU'da bölünmemiş kalıyor: bu tensör paralelliği değildir.

## Halka all-reduce baytları (gen:ring-bytes).
gen-ring-prompt = Bir halka all-reduce, [{ $tokens }, { $hidden }] boyutunda { $dtype } bir aktivasyonu (parti { $batch } × dizi { $seq } token, gizli boyut { $hidden }) TP={ $tp } GPU üzerinde topluyor. Her GPU kaç MiB gönderir? (1 MiB = 1.048.576 bayt; iki ondalık yeterli, ondalık işareti virgül.)
gen-ring-why = Tensör { $tokens } × { $hidden } × { $size } bayt = { $payload } bayttır ({ $payloadmib } MiB). Halka all-reduce'ta her GPU bunun 2(N−1)/N'ini gönderir: 2·{ $steps }/{ $tp } × { $payload } = { $sent } bayt = { $answer } MiB ({ $steps } reduce-scatter adımı, ardından { $steps } all-gather adımı).

## Bir model bu TP ile bölünebilir mi (gen:tp-validity); $hmod ve $fmod "a % b = r".
gen-tp-valid = Geçerli: her GPU tam kafalar ve FFN'den eşit pay alır
gen-tp-heads-fail = Geçersiz: kafalar GPU'lara eşit bölünemez (kafa % TP ≠ 0)
gen-tp-ffn-fail = Yalnızca FFN yüzünden geçersiz: kafalar bölünür ama FFN % TP ≠ 0
gen-tp-prompt = { $model } tensör paralelliği ile TP={ $tp } olarak bölünebilir mi?
gen-tp-why-valid = { $hmod } ve { $fmod }: her GPU { $each } kafa ve { $columns } FFN sütunu tutar.
gen-tp-why-heads = { $hmod }: { $heads } kafa { $tp } GPU'ya bölünemez ve bir kafa parçalanamaz (softmax'ı kafanın tüm sütunlarına ihtiyaç duyar).
gen-tp-why-ffn = { $hmod } bölünür ama { $fmod }: fc1'in { $ffn } sütunu { $tp } GPU'ya eşit paylaştırılamaz.
gen-tp-fb-fraction = { $mod }: bir GPU'ya kafanın bir kesri düşerdi.
gen-tp-fb-ffn-unequal = { $mod }: FFN sütunları eşit paylaşılamaz.
gen-tp-fb-heads-divide = { $mod }: kafalar eşit bölünür.
gen-tp-fb-heads-already = { $mod }: kafalar zaten bölünmüyor, yani tek sebep FFN değil.
gen-tp-fb-ffn-divides = { $mod }: FFN genişliği eşit bölünür.
gen-split-why = { $why } Bu model için 16'ya kadar geçerli TP boyutları: { $valid }.

## Bu TP ile gruplanmış sorgu dikkati (gen:gqa-validity); $tpmod "TP % kv = r".
gen-gqa-own = Geçerli: her GPU kendine ait tam KV kafaları tutar (KV kafaları GPU'lara tam bölünür)
gen-gqa-share = Yalnızca her KV kafası onu paylaşan GPU'lar arasında paylaşılarak geçerli (GPU'lar KV kafalarına tam bölünür)
gen-gqa-heads-fail = Geçersiz: sorgu kafaları eşit bölünemez (kafa % TP ≠ 0)
gen-gqa-kv-fail = Geçersiz: KV kafaları ne bölünebilir ne de eşit paylaşılabilir
gen-gqa-prompt = { $name } modelinin { $heads } sorgu kafası ve { $kv } KV kafası var (gruplanmış sorgu dikkati). Dikkat katmanı TP={ $tp } ile bölünebilir mi?
gen-gqa-mechanisms = İki çerçeve de bugün (2025) bunu kabul eder: vLLM, tplab gibi her GPU'ya ihtiyaç duyduğu KV kafasının tam bir kopyasını verir, böylece aynı KV kafasını paylaşan GPU'ların her biri aynı kopyayı tutar; güncel Megatron-Core ise KV ağırlıklarını bölünmüş tutar ve bunun yerine QKV aktivasyonlarını all-gather ile toplar. Daha eski Megatron-LM sürümleri KV kafalarının GPU'lara tam bölünmesi şartını arar ve bunu reddederdi.
gen-gqa-why-own = { $kvmod }: her GPU { $kvper } KV kafası ve onları okuyan { $qper } sorgu kafasını tutar.
gen-gqa-why-share = { $tp } > { $kv } KV kafası ama { $tpmod }: her KV kafası { $groups } GPU'nun sorgu kafalarına hizmet eder. { $mechanisms }
gen-gqa-why-heads = { $hmod }: KV kafaları ne olursa olsun { $heads } sorgu kafası { $tp } GPU'ya bölünemez.
gen-gqa-why-kv = { $kvmod } ve { $tpmod }: { $kv } KV kafası ne { $tp } GPU'ya bölünebilir ne de eşit GPU gruplarınca paylaşılabilir.
gen-gqa-fb-heads-already = { $hmod }: sorgu kafaları zaten bölünmüyor.
gen-gqa-fb-not-whole = { $kvmod }: { $tp } GPU'nun her biri tam KV kafası tutamaz.
gen-gqa-fb-no-sharing = { $kvmod }: paylaşmaya gerek yok, her GPU'da tam KV kafaları var.
gen-gqa-fb-no-groups = { $tpmod }: eşit GPU grupları KV kafalarını paylaşamaz.
gen-gqa-fb-heads-divide = { $hmod }: sorgu kafaları eşit bölünür.
gen-gqa-fb-heads-fail-here = { $hmod }: burada bölünmeyen sorgu kafalarıdır.
gen-gqa-fb-one-rule = Kurallardan biri sağlanır: { $kvmod } ya da { $tpmod }.

## GPU başına ağırlık belleği (gen:weight-memory). $ways yönelme ekiyle TP boyutu (4'e).
gen-mem-prompt = { $model } TP={ $tp } ile bölünüyor, ağırlıklar bf16 (2 bayt). Her GPU kaç MiB Transformer bloğu ağırlığı tutar (gömme katmanları hariç)?
gen-mem-count-llama = QKV { $h }·{ $h3 } ve çıkış projeksiyonu { $h }·{ $h } (bias yok), SwiGLU MLP'nin gate ve up matrisleri (her biri { $h }·{ $f }) ve down { $f }·{ $h }, iki RMSNorm (her biri { $h }) = { $full } parametre
gen-mem-count-gpt = QKV { $h }·{ $h3 } + { $h3 }, çıkış projeksiyonu { $h }·{ $h } + { $h }, fc1 { $h }·{ $f } + { $f }, fc2 { $f }·{ $h } + { $h }, iki LayerNorm { $h4 } = { $full } parametre
gen-mem-split-llama = Tüm matrisler { $ways } bölünür; yalnızca iki RMSNorm (katman başına { $norms } değer) kopyalanır.
gen-mem-split-gpt = QKV, çıkış projeksiyonu, fc1, fc2 ile QKV ve fc1 bias'ları { $ways } bölünür; LayerNorm'lar ve iki satır paralel bias (katman başına { $values } değer) kopyalanır.
gen-mem-why = Katman başına: { $count }; { $layers } katmanın tamamı bf16'da: { $fullmib } MiB. { $split } GPU başına: { $bytes } bayt = { $answer } MiB.
gen-mem-show-me = Bellek görünümünde TP={ $tp } ile { $name } blokları (görünüm f32 sayar: bf16 baytlarının iki katı)

## L katmanın all-reduce'ları (gen:all-reduce-count).
gen-ar-prompt = { $layers } Megatron tarzı Transformer katmanlı bir model TP={ $tp } ile çalışıyor. Katmanları bir ileri artı geri geçişte kaç all-reduce yapar (dizi paralelliği yok, aktivasyonlar yeniden hesaplanmıyor, gömme katmanları hariç)?
gen-ar-why = Katman başına: ileri geçişte 2 (dikkat çıkış projeksiyonundan sonra g, fc2'den sonra g), geri geçişte 2 (fc1'den önce f, QKV'den önce f). Motorun { $layers } katman için çizelgesi ileri geçişte { $forward } + geri geçişte { $backward } = { $total } all-reduce yapar. TP sayıyı değil, yalnızca baytları değiştirir. (Tam yeniden hesaplama iki ileri geçiş all-reduce'unu yeniden çalıştırır, katman başına 6 olur; sözlük paralel gömme ve kayıp kendi all-reduce'larını ekler.)

## Dizi paralelliğinin kolektifleri (gen:sp-collectives).
gen-sp-what-ag = all-gather
gen-sp-what-rs = reduce-scatter
gen-sp-note-ag = İleri geçişte: her sütun paralel katmandan önce f dizi parçalarını bir araya getirir. Geri geçişte: g'nin eşleniği çıktı gradyanını toplar ve her sütun paralel katman ağırlık gradyanı için girişini yeniden toplar, çünkü yalnızca parçası saklanmıştı (Megatron bunu giriş gradyanı çarpımıyla örtüştürür).
gen-sp-note-rs = İleri geçişte: her satır paralel katmandan sonra g kısmi çıktıları toplar ve her GPU'ya token'ların 1/N'ini bırakır. Geri geçişte: f'nin eşleniği aynısını giriş gradyanına yapar.
gen-sp-prompt = { $layers } Megatron tarzı Transformer katmanlı bir model TP={ $tp } ile, dizi paralelliği açık olarak çalışıyor. Katmanları bir ileri artı geri geçişte kaç { $what } yapar?
gen-sp-why = Motorun izinde katman başına ileri geçişte { $nforward } ({ $forward }) ve geri geçişte { $nbackward } ({ $backward }) tane, toplam { $perlayer }; × { $layers } katman = { $total }. { $note }

## Bir modeli hangi TP boyutları böler (gen:valid-tp-sizes).
gen-vt-prompt = { $model } hangi tensör paralel boyutlarıyla bölünebilir? (Uygun olanların hepsini seçin.)
gen-vt-choice = TP={ $tp }
gen-vt-works = TP={ $tp } olur: { $hmod } ve { $fmod }.
gen-vt-heads = TP={ $tp } olmaz: { $hmod }, kafalar parçalanamaz.
gen-vt-ffn = TP={ $tp } olmaz: { $fmod }, FFN eşit paylaşılamaz.
gen-vt-why = Bir TP boyutu kafa sayısını ({ $heads }) ve FFN genişliğini ({ $ffn }) bölmelidir. 16'ya kadar geçerli boyutlar: { $valid }.

## Bir GPU'da token başına KV önbelleği (gen:kv-cache). $kvfrom ayrılma ekiyle KV kafası sayısı
## (2'den).
gen-kv-prompt = { $name } ({ $layers } katman, { $hd } boyutlu { $kv } KV kafası) bf16 ile TP={ $tp } olarak çıkarımda çalıştırılıyor. Bağlamdaki her token için her GPU, tüm katmanlarda kaç KiB KV önbelleği tutar? (1 KiB = 1024 bayt)
gen-kv-why = K ve V, katman başına, GPU'daki KV kafası başına: 2 × { $layers } katman × { $pergpu } KV kafası × { $hd } × 2 bayt = { $bytes } bayt = { $answer } KiB.
gen-kv-replicated = TP={ $tp } > { $kv } KV kafası: her GPU bir KV kafasının önbelleğinin kopyasını tutar, bu yüzden TP={ $kvfrom } sonra GPU başına önbellek küçülmez.

## Bir ardışık düzen çizelgesinin boşluğu (gen:pipeline-bubble). $schedule aşağıdaki adlardan
## biri; $expression motorun kapalı formu, $fraction ölçülen boşta kalma payı (sadeleştirilmiş).
gen-bubble-gpipe = GPipe
gen-bubble-1f1b = 1F1B
gen-bubble-interleaved = dönüşümlü 1F1B
gen-bubble-zb-h1 = ZB-H1
gen-bubble-prompt = { $stages } aşamalı bir ardışık düzen, adım başına { $microbatches } mikro partiyi { $schedule } çizelgesiyle çalıştırıyor (bir ileri geçiş 1, bir geri geçiş 2 birim sürer). Aşamaların zamanının yüzde kaçı boşluktur (boşta geçer)? Bir ondalık basamakla yanıtlayın.
gen-bubble-prompt-virtual = Her biri { $virtual } katman parçası (sanal aşama) tutan { $stages } aşamalı bir ardışık düzen, adım başına { $microbatches } mikro partiyi { $schedule } çizelgesiyle çalıştırıyor (parça başına bir ileri geçiş 1, bir geri geçiş 2 birim sürer). Aşamaların zamanının yüzde kaçı boşluktur (boşta geçer)? Bir ondalık basamakla yanıtlayın.
gen-bubble-why = Çizelgenin boşluğu { $expression } = aşamaların zamanının { $fraction } kadarı: %{ $answer }.
gen-unit-percent = %

## Bir ardışık düzen aşamasının en yoğun anındaki aktivasyonları (gen:stage-memory). $n bir
## seçeneğin ya da yanıtın sayısı; $p, $m, $v aşama, mikro parti ve sanal aşama sayıları; $s
## sorulan aşama; $ps P − s; $all V·M; $peaks motorun her aşama için en yüksek sayısı, sırayla.
gen-sm-prompt = { $stages } aşamalı bir ardışık düzen (aşamalar 0'dan başlayarak numaralanır; ilk katmanlar 0. aşamadadır) adım başına { $microbatches } mikro partiyi { $schedule } çizelgesiyle çalıştırıyor. { $s }. aşama en yoğun anında aynı anda kaç mikro partinin aktivasyonlarını tutar?
gen-sm-prompt-virtual = Her biri { $virtual } katman parçası (sanal aşama) tutan { $stages } aşamalı bir ardışık düzen (aşamalar 0'dan başlayarak numaralanır) adım başına { $microbatches } mikro partiyi { $schedule } çizelgesiyle çalıştırıyor. { $s }. aşama en yoğun anında aynı anda kaç parça aktivasyonu (bir mikro partinin bir parçadaki aktivasyonları) tutar?
gen-sm-choice = { $n } × bir mikro partinin aktivasyonları
gen-sm-choice-chunks = { $n } × bir mikro partinin bir parçadaki aktivasyonları
gen-sm-fb-one = Bir mikro partinin aktivasyonları, ileri geçişi sonraki aşamaya geçince serbest kalmaz: geri geçişi onları kullanana kadar saklanır.
gen-sm-gpipe-fb-1f1b = { $n } = P − s, 1F1B'de { $s }. aşamanın sayısıdır. GPipe ilk geri geçişten önce { $m } ileri geçişin hepsini çalıştırır; o zamana kadar hiçbir şey serbest kalmaz.
gen-sm-gpipe-fb-stages = { $n } aşama sayısıdır, tutulan mikro parti sayısı değil: GPipe { $m } ileri geçişin hepsinin aktivasyonlarını geri geçişler başlayana kadar saklar.
gen-sm-gpipe-fb-warmup = { $n } = P − s − 1, 1F1B'de { $s }. aşamanın ısınma ileri geçişleridir. GPipe'ta ısınma sınırı yoktur: { $m } ileri geçişin hepsi önce çalışır.
gen-sm-gpipe-fb-slots = { $n } = M + P − 1, ardışık düzenin { $m } mikro partiyi { $p } aşamadan geçirmek için gereken ileri geçiş zaman dilimi sayısıdır (boşluk formülünün paydası); bir aşamanın tuttuğu aktivasyon sayısı değil.
gen-sm-gpipe-fb-share = { $n } = M / P mikro partileri aşamalar arasında paylaştırır; oysa her aşama her mikro partiyi kendi katmanlarından geçirir ve { $m } mikro partinin hepsini saklar.
gen-sm-1f1b-fb-all = { $n } GPipe'ın sayısıdır, adımdaki mikro partilerin hepsi. 1F1B geri geçişlere erken başlar: { $s }. aşamanın ısınmasından sonra her ileri geçiş bir mikro parti eklerken her geri geçiş bir tanesini serbest bırakır.
gen-sm-1f1b-fb-warmup = { $n } = P − s − 1 yalnızca ısınma ileri geçişlerini sayar; { $s }. aşamanın ilk geri geçişi bir şeyi serbest bırakmadan önce bir ileri geçiş daha tutulur (ve hiçbir zaman adımdaki { $m } mikro partiden fazlası tutulmaz).
gen-sm-1f1b-fb-reversed = { $n } = s + 1 yanlış uçtan sayar: ilk geri geçişini en uzun bekleyen 0. aşamadır, çünkü geri geçiş bütün aşamalardan geçerek gelir; bu yüzden en çoğunu o tutar ve s. aşama P − s tutar.
gen-sm-1f1b-fb-first = { $n } = P, 0. aşamanın sayısıdır. Sonraki aşamalar ilk geri geçişlerine daha erken kavuşur: s. aşama P − s tutar (en çok M).
gen-sm-1f1b-fb-uncapped = { $n } = P − s, adımda en az P − s mikro parti olsaydı doğru olurdu; ama yalnızca { $m } tane var: hiçbir aşama M'den fazlasını tutmaz.
gen-sm-zb-fb-1f1b = { $n } = P − s, bir mikro partiyi geri geçişinde serbest bırakan 1F1B'nin sayısı olurdu. ZB-H1 onu ancak W'sinden sonra serbest bırakır (ağırlık gradyanı aktivasyonlara gerek duyar) ve W her aşamada ileri geçişin P − 1 mikro parti gerisinden gelir.
gen-sm-zb-fb-all = { $n } GPipe'ın sayısıdır, adımdaki mikro partilerin hepsi. ZB-H1 her mikro partiyi, ileri geçişinin P − 1 mikro parti gerisinden gelen W'sinden sonra serbest bırakır.
gen-sm-zb-fb-lag = { $n } = P − 1, W'nin gecikmesini sayar ama yoldaki ileri geçişi saymaz: W, P − 1 mikro parti geriden gelirken aynı anda P mikro parti canlıdır (en çok M).
gen-sm-zb-fb-stages = { $n } = P için adımda en az P mikro parti gerekir; { $m } mikro partiyle en çok { $m } tanesi aynı anda canlı olur.
gen-sm-int-fb-1f1b = { $n } = P − s, düz 1F1B'nin bütün mikro parti cinsinden sayısıdır. Dönüşümlü çizelgede { $s }. aşama { $v } parça tutar ve 2(P − s − 1) + (V − 1)·P parça ileri geçişiyle ısınır; bu yüzden daha çok parça aktivasyonu tutar.
gen-sm-int-fb-times-v = { $n } = V·(P − s), 1F1B'nin sayısını parça sayısıyla büyütür; oysa Megatron-LM'in dönüşümlü ısınması 2(P − s − 1) + (V − 1)·P parça ileri geçişi, artı yoldaki bir tanedir.
gen-sm-int-fb-all = { $n } = V·M, her mikro partinin her parçasıdır: bir aşama bunların hepsini ancak bütün ileri geçişleri önce çalıştırdığında tutar (M = P). Burada geri geçişler ısınmadan sonra başlar.
gen-sm-int-fb-warmup = { $n } yalnızca ısınma parça ileri geçişlerini sayar, 2(P − s − 1) + (V − 1)·P; ilk geri geçiş birini serbest bırakmadan önce bir parça ileri geçişi daha tutulur.
gen-sm-why-gpipe = GPipe ilk geri geçişten önce { $m } ileri geçişin hepsini çalıştırır; bu yüzden en yoğun anında her aşama M = { $n } mikro partinin hepsinin aktivasyonlarını tutar. Motorun çalıştırması, aşama aşama: { $peaks }.
gen-sm-why-1f1b = { $s }. aşama P − s − 1 = { $warmup } ısınma ileri geçişi yapar, sonra ilk geri geçişi birini serbest bırakmadan önce bir ileri geçiş daha: min(P − s, M) = min({ $ps }, { $m }) = { $n }. Motorun çalıştırması, aşama aşama: { $peaks }.
gen-sm-why-zb-h1 = ZB-H1 bir mikro partinin aktivasyonlarını ancak W'sinden sonra serbest bırakır ve W her aşamada ileri geçişin P − 1 mikro parti gerisinden gelir; bu yüzden her aşama min(P, M) = min({ $p }, { $m }) = { $n } tutar. Motorun çalıştırması, aşama aşama: { $peaks }.
gen-sm-why-interleaved = Megatron-LM'in dönüşümlü çizelgesi { $s }. aşamayı 2(P − s − 1) + (V − 1)·P = { $chunkwarmup } parça ileri geçişiyle ısıtır, sonra ilk geri geçiş birini serbest bırakmadan önce bir tane daha: { $chunkwarmup } + 1 = { $n } parça aktivasyonu, her biri aşamanın katmanlarının 1/{ $v } kadarı (hiçbir zaman V·M = { $all } üstünde değil). Motorun çalıştırması, aşama aşama: { $peaks }.

## Planlayıcıda bir MoE modeli (uzman paralelliği sorularının Göster düğmesi).
gen-moe-show-me = Planlayıcıda { $gpus } GPU'da { $name }; planlayıcı uzman paralel yerleşimlerinin bedelini hesaplar

## Bir MoE dağıtım all-to-all'unun baytları (gen:all-to-all-bytes). $mib MiB cinsinden bir bayt
## sayısı, iki ondalık; $epm EP − 1.
gen-a2a-prompt = { $name } (gizli boyut { $hidden }, { $experts } uzman, top-{ $k } yönlendirme) uzman paralelliği EP = { $ep } ile, bf16 aktivasyonlarla ve her GPU'da { $tokens } token'la çalışıyor. Yönlendirme dengeliyken her GPU bir dağıtım (dispatch) all-to-all'unda diğer GPU'lara kaç bayt gönderir? (1 MiB = 1024 × 1024 bayt)
gen-a2a-choice = { $mib } MiB
gen-a2a-fb-local = { $mib } MiB her satırı sayar; oysa satırların 1/EP'si GPU'nun kendi uzmanları içindir ve GPU'dan hiç çıkmaz: (EP − 1)/EP ile çarpın.
gen-a2a-fb-k = { $mib } MiB her token'ı bir kez gönderir; oysa bir token k = { $k } uzmanının her birine gider: genellikle farklı GPU'lardaki k satır.
gen-a2a-fb-over-ep = { $mib } MiB kalan 1/EP'liktir: GPU'nun kendi uzmanlarına giden satırlar. Çıkan, geri kalan (EP − 1)/EP'liktir.
gen-a2a-fb-both = { $mib } MiB dağıtıma birleştirmeyi (geri dönen sonuçları) da ekler; soru tek bir all-to-all'u soruyor.
gen-a2a-fb-every-rank = { $mib } MiB her satırı, yayın gibi, diğer EP − 1 GPU'nun hepsine gönderir; all-to-all her satırı yalnızca uzmanını tutan GPU'ya gönderir.
gen-a2a-why = { $tokens } token'ın her biri gizli vektörünü k = { $k } uzmanının her birine gönderir ve bu satırların GPU'nun kendi uzmanlarına giden 1/EP'lik kısmı GPU'dan hiç çıkmaz: token · k · h · 2 bayt · (EP − 1)/EP = { $tokens } · { $k } · { $hidden } · 2 · { $epm }/{ $ep } = { $bytes } bayt = { $mib } MiB (tplab'in maliyet modeli). Birleştirme aynı miktarı geri gönderir; geri geçiş ikisini de tekrarlar.

## Hangi uzman paralel yerleşim geçerli (gen:ep-layout). $mod bir kalan, örneğin "8 % 3 = 2".
gen-ep-prompt = { $name } (MoE katmanı başına { $experts } uzman, { $heads } dikkat kafası, { $kv } KV kafası, uzman FFN genişliği { $ffn }, { $layers } katman) { $gpus } GPU'da Megatron-Core'un uzman paralelliğiyle eğitiliyor; her uzman dikkatle aynı TP'ye bölünüyor (ETP = TP) ve bağlam paralelliği yok. Hangi yerleşim geçerlidir (bellek bir yana, yalnızca yerleşim kurallarına göre)?
gen-ep-choice = TP { $tp } × PP { $pp } × DP { $dp }, EP { $ep }
gen-ep-fb-dp = EP { $ep }, DP { $dp } değerini bölmez ({ $mod }): Megatron-Core, ETP × EP'nin TP × CP × DP'yi bölmesini ister; ETP = TP iken ve CP yokken bu, DP'nin EP'ye bölünmesi demektir: uzman paralel gruplar veri paralel rank'lerden oluşur.
gen-ep-fb-experts = EP { $ep }, { $experts } uzmanı bölmez ({ $mod }): her EP rank'i aynı sayıda bütün uzman tutmalıdır.
gen-ep-fb-gpus = TP × PP × DP = { $tp } × { $pp } × { $dp } = { $needed }, { $gpus } değil: EP, GPU sayısının dördüncü çarpanı değildir. DP rank'lerinden alınır; bu yüzden bu yerleşim bazı GPU'ları işsiz bırakır.
gen-ep-fb-heads = TP { $tp } dikkat kafalarını bölmez ({ $mod }): her GPU bütün kafalar tutmalıdır.
gen-ep-fb-kv = TP { $tp } KV kafalarını bölmez ({ $mod }): tplab'in planlayıcısı her GPU'da bütün KV kafaları ister (Megatron-LM'in kuralı; bugünkü Megatron-Core, KV kafalarının katı olan bir TP'yi de QKV aktivasyonlarını all-gather ile toplayarak kabul eder, ders 5).
gen-ep-fb-ffn = TP { $tp } FFN genişliğini bölmez ({ $mod }): fc1'in sütunları eşit paylaşılmalıdır.
gen-ep-fb-layers = PP { $pp } katmanları bölmez ({ $mod }): her ardışık düzen aşaması aynı sayıda katman alır.
gen-ep-why = Bir yerleşim şu durumda geçerlidir: TP × PP × DP = { $gpus } GPU (EP yeni GPU eklemez: uzman katmanları aynı GPU'ları yeniden kullanır), EP hem DP'yi hem { $experts } uzmanı böler, TP kafaları, KV kafalarını ve FFN genişliğini böler, PP de katmanları böler. { $layout }: { $tp } × { $pp } × { $dp } = { $gpus }, { $dpmod }, { $emod }. DP { $dp } iken planlayıcı EP { $eps } değerlerine izin verir. "EP, DP'yi böler" bu sorunun varsayımından, bağlam paralelliği olmadan ETP = TP'den gelir: MoE paralel katlamadan (arXiv 2504.14960) beri Megatron-Core'un kuralı ETP × EP'nin TP × CP × DP'yi bölmesidir; yani ETP 1 ile EP, TP rank'lerini de alabilir (ders 16).
