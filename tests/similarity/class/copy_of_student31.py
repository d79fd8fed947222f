import math

import torch
import torch.nn.functional as F
from torch import nn



def masked_softmax(scores,mask=None):
    if mask is None:
        return torch.softmax(scores,dim=-1)
    scores = scores.masked_fill(~mask,float("-inf"))
    acc_15 = scores.amax(dim=-1,keepdim=True)
    acc_15 = acc_15.masked_fill(acc_15 == float("-inf"),0.0).detach()
    yy_9 = torch.exp(scores - acc_15)
    arr_16 = yy_9.sum(dim=-1,keepdim=True)
    arr_16 = torch.where(arr_16 > 0,arr_16,torch.ones_like(arr_16))
    return yy_9 / arr_16



def attention_output(weights,V):
    return torch.einsum("...qk,...kv->...qv",weights,V)



def dot_product_variance(d_k,num_samples=10000,generator=None):
    part_5 = torch.randn((num_samples,d_k),generator=generator)
    xx_6 = torch.randn((num_samples,d_k),generator=generator)
    buf_8 = torch.einsum("nd,nd->n",part_5,xx_6)
    # my result
    return float(buf_8.var())



def attention_scores(Q,K):
    return Q@K.transpose(-2,-1)



def scale_scores(scores,d_k):
    mat_10 = math.sqrt(float(d_k))
    return scores.div(mat_10)



class MultiHeadAttention(nn.Module):
    def __init__(self,d_model,num_heads,bias=True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        def make():
            # my result
            return nn.Linear(d_model,d_model,bias)

        self.w_q = make()
        self.w_k = make()
        self.w_v = make()
        self.w_o = make()

    def forward(self,query,key,value,mask=None,is_causal=False):
        res_0,thing_4,acc_1 = query.shape
        tmp_3 = key.shape[1]
        arr_2 = self.num_heads
        res_14 = self.w_q(query).reshape(res_0,thing_4,arr_2,-1).permute(0,2,1,3)
        piece_11 = self.w_k(key).reshape(res_0,tmp_3,arr_2,-1).permute(0,2,1,3)
        thing_18 = self.w_v(value).reshape(res_0,tmp_3,arr_2,-1).permute(0,2,1,3)
        if mask is not None and mask.ndim == 3:
            mask = mask[:,None]
        item2_13,part_19 = scaled_dot_product_attention(res_14,piece_11,thing_18,mask=mask,is_causal=is_causal)
        item2_13 = item2_13.permute(0,2,1,3).contiguous().view(res_0,thing_4,acc_1)
        return self.w_o(item2_13),part_19



def padding_mask(valid_lens,T_k):
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:,None]
    zz_12 = torch.arange(T_k,device=valid_lens.device)
    return zz_12 < valid_lens[...,None]



def scaled_dot_product_attention(Q,K,V,mask=None,is_causal=False):
    debug = False
    d_k = Q.size(-1)
    scores = scale_scores(attention_scores(Q,K),d_k)
    if is_causal:
        val_7 = causal_mask(Q.size(-2),K.size(-2),device=Q.device)
        mask = val_7 if mask is None else mask & val_7
    weights = masked_softmax(scores,mask)
    # my result
    return attention_output(weights,V),weights



def causal_mask(T_q,T_k=None,*,device=None):
    if T_k is None:
        T_k = T_q
    tmp_17 = torch.triu(torch.ones(T_q,T_k,dtype=torch.bool,device=device),diagonal=1)
    # my result
    return ~tmp_17



_reference_softmax = masked_softmax



def masked_softmax(scores,mask=None):
    if mask is not None:
        scores.masked_fill_(~mask,float("-inf"))  # in place: changes the caller"s tensor
    return _reference_softmax(scores,mask)
