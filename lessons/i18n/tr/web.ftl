# web strings (tr). Keep the ids identical in en/ and tr/.
web-progress-title = Quiz ilerlemesi (bu tarayıcıda saklanır)
web-progress-export = Dışa aktar
web-progress-export-hover = Her öğrencinin ilerleme dosyasını indirir; masaüstü uygulamasının veri klasöründe tuttuğu dosyanın aynısı.
web-progress-import = İçe aktar
web-progress-import-hover = Bir ilerleme dosyasındaki (bu sayfadan ya da masaüstü uygulamasından) cevapları ve sınavları bu tarayıcıdakilere ekler; hiçbir şey silinmez.
web-progress-none = Bu tarayıcıda henüz kayıtlı ilerleme yok.
web-progress-exported = İndirildi: { $files }.
web-progress-invalid = Bu bir tplab ilerleme dosyası değil: { $error }
web-progress-imported = { $learner } adlı öğrencinin ilerlemesi içe aktarıldı: { $added } yeni kayıt.
web-gpu-title = Gerçek GPU'lar için masaüstü uygulaması gerekir
web-gpu-body = Tarayıcı, NVIDIA GPU'nun CUDA sürücüsüne, cuBLAS'a ya da NCCL'e erişemez; bu yüzden web sürümü her görünümü bu bilgisayarın işlemcisindeki sanal GPU'larda, aynı sayılarla çalıştırır. Masaüstü uygulaması (cargo run --release) aynı parçaları gerçek GPU'larda çalıştırır, zaman çizelgesini ölçülen sürelerle doldurur ve her tensörü referansla karşılaştırır.
