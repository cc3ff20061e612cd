# prov/util: tagq
