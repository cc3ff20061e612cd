# prov/util: cntr_eq
