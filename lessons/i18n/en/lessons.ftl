## Show me targets as the command line lists them (`tplab lessons`, the quiz's "Show me"): the
## view, then what the scenario changes. $view is the view's name in content files (step,
## planner), $name its side-bar title in this language, $title the English side-bar title.
showme-view = { $view } view, { $preset }, TP={ $tp }
showme-model = model { $model }
showme-schedule = { $schedule } schedule
showme-stages = { $n } stages
showme-microbatches = { $n } micro-batches
showme-virtual-stages = { $n } virtual stages
showme-cluster = cluster { $cluster }
showme-forward-at = forward pass at { $op }
showme-backward-at = backward pass at { $op }
