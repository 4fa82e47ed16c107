# train
