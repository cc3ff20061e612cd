# prov/util: wait_cq
