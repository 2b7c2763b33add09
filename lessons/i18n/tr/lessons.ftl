## Komut satırının listelediği Göster hedefleri (`tplab lessons`, kısa sınavın "Göster"i): görünüm,
## sonra senaryonun değiştirdikleri. $view görünümün içerik dosyalarındaki adı (step, planner),
## $name bu dildeki kenar çubuğu başlığı, $title İngilizce kenar çubuğu başlığı.
showme-view = { $name } görünümü ({ $title }), { $preset }, TP={ $tp }
showme-model = model { $model }
showme-schedule = { $schedule } çizelgesi
showme-stages = { $n } aşama
showme-microbatches = { $n } mikro parti
showme-virtual-stages = { $n } sanal aşama
showme-cluster = küme { $cluster }
showme-forward-at = ileri geçişte { $op }
showme-backward-at = geri geçişte { $op }
