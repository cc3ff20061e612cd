# prov/util: av_mr
