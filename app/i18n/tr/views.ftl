# views strings (tr). Keep the ids identical in en/ and tr/.

## Shared by the views: errors of an invalid scenario and their fixes.
list-or = veya
invalid-choice = Geçersiz seçim: { $error }
err-hidden-heads = { $hidden } gizli boyutu { $heads } başlığa bölünemez: gizli boyut başlık sayısının katı olmalı (başlık boyutu = gizli boyut / başlık sayısı).
valid-heads = Gizli boyutu tam bölen başlık sayıları: { $list }.
use-heads = { $heads } başlık kullan
nearest-tp = En yakın geçerli TP boyutları: { $list }
use-tp = TP={ $tp } kullan
err-zero = { $field } en az 1 olmalı (0 verildi)
err-over-limit = { $field } = { $value }, { $max } sınırının üzerinde; en fazla { $max } kullanın
err-tp-range = TP boyutu 1 ile { $max } arasında olmalı ({ $tp } verildi)
err-heads-tp = { $heads } başlık { $tp } GPU'ya bölünemez: her GPU tam başlıklar tutmalı (heads % tp == 0); geçerli TP boyutları: { $valid }
err-ffn-tp = { $ffn } FFN genişliği { $tp } GPU'ya bölünemez: fc1'in sütunları ve fc2'nin satırları eşit bölünmeli (ffn % tp == 0); geçerli TP boyutları: { $valid }
err-too-large = bu senaryo yaklaşık { $needed } tensör belleği ister, { $limit } sınırının üzerinde; seq, batch, hidden ya da katman sayısını küçültün
err-seq-tp = dizi paralelliği diziyi GPU'lara böler: seq = { $seq }, { $tp } GPU'ya bölünemez (seq % tp == 0); geçerli TP boyutları: { $valid }; ya da seq'i { $tp } ile tam bölünen bir değer yapın
err-kv-heads = { $kv } KV başlığı { $heads } sorgu başlığına hizmet edemez: her KV başlığı aynı sayıda sorgu başlığına hizmet etmeli (heads % kv_heads == 0); geçerli KV başlığı sayıları: { $valid }
err-kv-tp = { $kv } KV başlığı { $tp } GPU'ya dağıtılamaz: her GPU ya tam KV başlıkları (kv_heads % tp == 0) ya da bir KV başlığının eşit bir payını (tp % kv_heads == 0) tutmalı; geçerli TP boyutları: { $valid }
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
view-serve = Sunum
view-planner = Planlayıcı
view-lessons = Dersler
view-quiz = Kısa sınav
view-gpu = GPU
theme-light = Açık
theme-dark = Koyu
presenter-mode = Projeksiyon modu (F11)
presenter-hint = Tam ekran ve büyük yazı. Boşluk oynat/duraklat, Sol/Sağ ok ya da PageUp/PageDown adım, Home baştan, 1-8 TP seçer.
export-png = PNG olarak kaydet
export-hint = Pencereyi, görünümün ve gösterdiğinin adını taşıyan bir PNG olarak { $dir } klasörüne kaydeder.
export-saved = Kaydedildi: { $path }
export-failed = Kaydedilemedi: { $error }

## Playground.
pg-title = Oyun alanı: bir katman nasıl bölünür
pg-hide-activations = Aktivasyonları gizle
pg-preset = Hazır ayar:
pg-hidden = gizli boyut
pg-heads = başlık
pg-kv-heads = KV başlığı
pg-kv-hint = Gruplanmış sorgu dikkati (GQA): sorgu başlıklarından daha az anahtar/değer başlığı; her biri bir grup sorgu başlığı tarafından paylaşılır. Başlık sayısına eşitse sıradan çok başlıklı dikkat.
pg-ffn = ffn
pg-seq = dizi
pg-batch = yığın
pg-layers = katman
pg-tp-field = TP (en çok 64)
pg-dtype = veri tipi
pg-algorithm = algoritma
pg-sp = dizi paralelliği
pg-sp-hint = Korthikanti vd. 2022: LayerNorm, bias ve artık bağlantı token'ların 1/TP'si üzerinde çalışır; her all-reduce bir reduce-scatter ile bir all-gather'a dönüşür.
pg-note-copy = { " " }(kopya { $copy } / { $copies }: TP, KV başlığı sayısından büyük; bu yüzden vLLM'deki gibi her KV başlığı çoğaltılır)
pg-note-qkv-gqa = { $first }-{ $last } başlıklarının Q sütunları, { $kvfirst }-{ $kvlast } KV başlıklarının K ve V sütunları{ $copy } (sütun paralel)
pg-note-qkv = { $first }-{ $last } başlıklarının Q, K ve V sütunları (sütun paralel)
pg-note-out = { $first }-{ $last } başlıklarının satırları (satır paralel: çıktı kısmi bir toplamdır)
pg-note-fc1 = bir sütun bloğu (sütun paralel; GeLU yerel kalır)
pg-note-fc2 = bir satır bloğu (satır paralel: çıktı kısmi bir toplamdır)
pg-split-cols = sütunlara bölünmüş
pg-split-rows = satırlara bölünmüş
pg-replicated = kopyalanmış
pg-shard-hover = GPU { $rank }: { $name } parçası [{ $rows }, { $cols }], { $bytes }
    { $note }
pg-grid-cell = ızgara hücresi = { $cell }x{ $cell } eleman
pg-matrices-a11y = { $tp } GPU'ya bölünmüş ağırlık matrisleri: { $summary }
pg-gqa-head = gruplanmış sorgu dikkati: { $heads } sorgu başlığı { $kv } KV başlığını paylaşır (KV başlığı başına { $per })
pg-gqa-holders = GPU { $gpus }: KV başlığı { $k }
pg-gqa-replicated = { $head }; TP={ $tp } > { $kv } KV başlığı, bu yüzden her KV başlığı { $copies } GPU'da kopyalanır (vLLM kuralı, tp % kv_heads == 0): { $holders }. Kopyaların K/V gradyanları her grubun içinde all-reduce ile toplanır.
pg-gqa-split = { $head }; her GPU { $per } tam KV başlığı tutar (Megatron-LM kuralı, kv_heads % tp == 0), kopya yok.
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
