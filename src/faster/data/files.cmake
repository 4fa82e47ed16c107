# data
